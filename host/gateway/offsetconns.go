package gateway

import (
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"
)

// offsetConns spreads coordhost's own offset forwards (OffsetCommit,
// TxnOffsetCommit, OffsetFetch) over a few clients, each with its own
// connection to the data plane. A Kafka broker serves one request of a
// connection at a time, in order: on the admin client's one connection,
// every group's offset forwards waited for each other and for the
// metadata and end-offset polls, where Kafka's own consumers each commit
// and fetch on a connection of their own. A forward takes the client with
// the fewest forwards in flight. Which connection a forward uses does not
// order anything: a group's steps on the same partitions are ordered by
// its offset queue (host/offsets), each starting only once the previous
// forward is answered, and a forward that fails has lost its connection
// (franz-go closes it, and retries on a new one, before it gives up).
type offsetConns struct {
	clients  []*kgo.Client
	inFlight []atomic.Int32
}

// offsetClients is how many clients offsetConns opens: a handful of
// connections is enough for the forwards of steps on disjoint partitions
// to stop queueing behind each other, and few enough not to matter to
// the cluster's connection quotas.
const offsetClients = 4

func newOffsetConns(opts []kgo.Opt) (*offsetConns, error) {
	o := &offsetConns{inFlight: make([]atomic.Int32, offsetClients)}
	for range offsetClients {
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			o.close()
			return nil, err
		}
		o.clients = append(o.clients, cl)
	}
	return o, nil
}

// take returns the client with the fewest forwards in flight and the
// function to call when the forward is answered.
func (o *offsetConns) take() (*kgo.Client, func()) {
	best := 0
	for i := range o.clients {
		if o.inFlight[i].Load() < o.inFlight[best].Load() {
			best = i
		}
	}
	o.inFlight[best].Add(1)
	return o.clients[best], func() { o.inFlight[best].Add(-1) }
}

func (o *offsetConns) close() {
	for _, cl := range o.clients {
		cl.Close()
	}
}
