package host_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// streamsMember is a raw KIP-1071 member speaking StreamsGroupHeartbeat
// over a kgo client's connection: it joins with a one-subtopology topology
// reading source, adopts every assignment it is given at once (it owns no
// state to revoke) and reports it back on the next heartbeat.
type streamsMember struct {
	cl      kmsg.Requestor
	group   string
	source  string
	id      string
	process string

	mu       sync.Mutex
	epoch    int32
	interval time.Duration
	active   []kmsg.TaskIDs
	errs     []string
	fenced   int
}

func newStreamsMember(cl kmsg.Requestor, group, source string) *streamsMember {
	var b [8]byte
	_, _ = rand.Read(b[:])
	id := "m-" + hex.EncodeToString(b[:])
	return &streamsMember{cl: cl, group: group, source: source, id: id, process: "p-" + id, interval: time.Second}
}

// heartbeat sends one heartbeat and applies the answer; it returns the
// response's error code and the round-trip time.
func (m *streamsMember) heartbeat(ctx context.Context) (int16, time.Duration, error) {
	m.mu.Lock()
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = m.group, m.id, m.epoch
	if m.epoch == 0 {
		req.RebalanceTimeoutMillis = 30000
		req.ProcessID = &m.process
		req.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
			{SubtopologyID: "0", SourceTopics: []string{m.source}}}}
	}
	req.ActiveTasks = append([]kmsg.TaskIDs{}, m.active...)
	req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	m.mu.Unlock()
	start := time.Now()
	resp, err := req.RequestWith(ctx, m.cl)
	rtt := time.Since(start)
	if err != nil {
		return -1, rtt, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if resp.ErrorCode != 0 {
		msg := ""
		if resp.ErrorMessage != nil {
			msg = *resp.ErrorMessage
		}
		m.errs = append(m.errs, fmt.Sprintf("%v: %s", kerr.ErrorForCode(resp.ErrorCode), msg))
		if resp.ErrorCode == kerr.FencedMemberEpoch.Code || resp.ErrorCode == kerr.UnknownMemberID.Code {
			m.fenced++
		}
		return resp.ErrorCode, rtt, nil
	}
	m.epoch = resp.MemberEpoch
	if resp.HeartbeatIntervalMillis > 0 {
		m.interval = time.Duration(resp.HeartbeatIntervalMillis) * time.Millisecond
	}
	if resp.ActiveTasks != nil {
		m.active = resp.ActiveTasks
	}
	return 0, rtt, nil
}

// leave sends the leave heartbeat (epoch -1).
func (m *streamsMember) leave(ctx context.Context) error {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = m.group, m.id, -1
	resp, err := req.RequestWith(ctx, m.cl)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.ErrorCode)
}

func (m *streamsMember) partitions() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []int32
	for _, t := range m.active {
		out = append(out, t.Partitions...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (m *streamsMember) state() (int32, []string, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.epoch, append([]string(nil), m.errs...), m.fenced
}

// coordinator is a kmsg.Requestor that sends requests straight to the
// group's coordinator (as found by FindCoordinator): kgo routes only the
// group APIs it knows, and the streams APIs are not among them.
type coordinator struct {
	cl   *kgo.Client
	once sync.Once
	b    *kgo.Broker
	err  error
}

func (c *coordinator) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	c.once.Do(func() {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorKey = "any"
		resp, err := fc.RequestWith(ctx, c.cl)
		if err != nil {
			c.err = err
			return
		}
		c.b = c.cl.Broker(int(resp.NodeID))
	})
	if c.err != nil {
		return nil, c.err
	}
	return c.b.Request(ctx, req)
}

// describeStreams returns a streams group's description.
func describeStreams(ctx context.Context, cl kmsg.Requestor, group string) (kmsg.StreamsGroupDescribeResponseGroup, error) {
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return kmsg.StreamsGroupDescribeResponseGroup{}, err
	}
	if len(resp.Groups) != 1 {
		return kmsg.StreamsGroupDescribeResponseGroup{}, fmt.Errorf("describe answered %d groups", len(resp.Groups))
	}
	g := resp.Groups[0]
	return g, kerr.ErrorForCode(g.ErrorCode)
}

// createTopic creates topic with n partitions through coordhost.
func createTopic(ctx context.Context, cl *kgo.Client, topic string, n int32) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = topic, n, 1
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if c := resp.Topics[0].ErrorCode; c != 0 && c != kerr.TopicAlreadyExists.Code {
		return kerr.ErrorForCode(c)
	}
	return nil
}
