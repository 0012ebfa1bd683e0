package gateway

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func fetchReq(id, epoch int32) *kmsg.FetchRequest {
	r := kmsg.NewPtrFetchRequest()
	r.Version, r.SessionID, r.SessionEpoch = 13, id, epoch
	return r
}

func fetchResp(id int32, code int16) *kmsg.FetchResponse {
	r := kmsg.NewPtrFetchResponse()
	r.Version, r.SessionID, r.ErrorCode = 13, id, code
	return r
}

// TestLiveFetchSessions: only incremental fetches on a session seen since
// start are forwarded; new, sessionless and closing fetches always are.
func TestLiveFetchSessions(t *testing.T) {
	s := newLiveFetchSessions()
	refused := func(node, id, epoch int32) bool {
		r := s.refuse(node, fetchReq(id, epoch))
		if r != nil && (r.ErrorCode != kerr.FetchSessionIDNotFound.Code || r.Version != 13) {
			t.Fatalf("refusal %+v", r)
		}
		return r != nil
	}
	for _, c := range []struct{ id, epoch int32 }{{0, 0}, {0, -1}, {7, 0}, {7, -1}} {
		if refused(0, c.id, c.epoch) {
			t.Errorf("session %d epoch %d refused", c.id, c.epoch)
		}
	}
	old := fetchReq(7, 3)
	old.Version = 6
	if s.refuse(0, old) != nil {
		t.Error("a fetch below v7 (no sessions) refused")
	}
	if !refused(0, 7, 3) {
		t.Fatal("an incremental fetch on a session restored from before start was forwarded")
	}
	s.observe(0, fetchReq(0, 0), fetchResp(9, 0)) // session 9 created
	if refused(0, 9, 1) {
		t.Fatal("an incremental fetch on a session created since start was refused")
	}
	if !refused(1, 9, 1) {
		t.Fatal("session 9 of node 0 accepted on node 1")
	}
	s.observe(0, fetchReq(9, 1), fetchResp(0, kerr.InvalidFetchSessionEpoch.Code))
	if !refused(0, 9, 2) {
		t.Fatal("a session the data plane refused is still accepted")
	}
	s.observe(0, fetchReq(0, 0), fetchResp(10, 0))
	s.observe(0, fetchReq(10, -1), fetchResp(0, 0)) // closed
	if !refused(0, 10, 1) {
		t.Fatal("a closed session is still accepted")
	}
}

// TestLiveFetchSessionsBounded: the remembered sessions stay under the cap,
// the least recently used forgotten first.
func TestLiveFetchSessionsBounded(t *testing.T) {
	s := newLiveFetchSessions()
	now := time.Unix(0, 0)
	s.now = func() time.Time { now = now.Add(time.Millisecond); return now }
	for id := int32(1); id <= 3*maxFetchSessions; id++ {
		s.observe(0, fetchReq(0, 0), fetchResp(id, 0))
		if len(s.seen) > maxFetchSessions {
			t.Fatalf("%d sessions remembered, cap %d", len(s.seen), maxFetchSessions)
		}
	}
	if s.refuse(0, fetchReq(3*maxFetchSessions, 1)) != nil {
		t.Error("the newest session was forgotten")
	}
	if s.refuse(0, fetchReq(1, 1)) == nil {
		t.Error("the oldest session is still remembered")
	}
}
