package gateway

import (
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// liveFetchSessions keeps the embedded data plane's incremental fetches
// (KIP-227) to the sessions it created since this process started.
//
// After a graceful stop the embedded cluster (kfake) restores its fetch
// sessions, but without the topic ids their partitions were added under:
// an incremental Fetch (v13+) then answers the partitions the request does
// not name under a zero topic id, which clients drop as a topic they did
// not ask for, and since the client believes those partitions are in its
// session it never names them again. A Kafka broker loses its fetch
// sessions on restart and answers FETCH_SESSION_ID_NOT_FOUND, after which
// the client opens a new session with a full fetch. The gateway gives that
// answer itself to an incremental fetch whose session it has not seen
// created or used since it started.
type liveFetchSessions struct {
	mu   sync.Mutex
	seen map[fetchSessionKey]time.Time // last use
	now  func() time.Time
}

type fetchSessionKey struct{ node, id int32 }

// maxFetchSessions bounds the sessions remembered. Forgetting a live one
// costs its client one full fetch, never data.
const maxFetchSessions = 4096

func newLiveFetchSessions() *liveFetchSessions {
	return &liveFetchSessions{seen: map[fetchSessionKey]time.Time{}, now: time.Now}
}

// refuse answers an incremental fetch on a session not created since start
// with FETCH_SESSION_ID_NOT_FOUND; it returns nil for a fetch to forward.
func (s *liveFetchSessions) refuse(node int32, req *kmsg.FetchRequest) *kmsg.FetchResponse {
	if req.Version < 7 || req.SessionID <= 0 || req.SessionEpoch <= 0 {
		return nil
	}
	s.mu.Lock()
	_, ok := s.seen[fetchSessionKey{node, req.SessionID}]
	s.mu.Unlock()
	if ok {
		return nil
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = req.Version
	resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
	return resp
}

// observe learns the sessions the data plane created, used or closed.
func (s *liveFetchSessions) observe(node int32, req *kmsg.FetchRequest, resp *kmsg.FetchResponse) {
	if req.Version < 7 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.SessionID > 0 && (req.SessionEpoch <= 0 || resp.ErrorCode != 0) {
		delete(s.seen, fetchSessionKey{node, req.SessionID}) // closed, replaced or refused
	}
	if resp.ErrorCode != 0 || resp.SessionID <= 0 || req.SessionEpoch < 0 {
		return
	}
	s.seen[fetchSessionKey{node, resp.SessionID}] = s.now()
	if len(s.seen) > maxFetchSessions {
		s.forgetOldest()
	}
}

// forgetOldest drops the least recently used quarter of the sessions.
func (s *liveFetchSessions) forgetOldest() {
	used := make([]time.Time, 0, len(s.seen))
	for _, t := range s.seen {
		used = append(used, t)
	}
	sort.Slice(used, func(i, j int) bool { return used[i].Before(used[j]) })
	cut := used[len(used)/4]
	for k, t := range s.seen {
		if !t.After(cut) {
			delete(s.seen, k)
		}
	}
}
