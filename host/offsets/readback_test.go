package offsets

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// readPlane answers FetchOffsets from answers in turn (the last one
// again once they are used up) and counts the reads.
type readPlane struct {
	Plane   // the other requests are not called
	answers []readAnswer
	reads   int
	asked   []*kmsg.OffsetFetchRequest
}

type readAnswer struct {
	resp *kmsg.OffsetFetchResponse
	err  error
}

func (p *readPlane) FetchOffsets(_ context.Context, req *kmsg.OffsetFetchRequest) (*kmsg.OffsetFetchResponse, error) {
	a := p.answers[min(p.reads, len(p.answers)-1)]
	p.reads++
	p.asked = append(p.asked, req)
	return a.resp, a.err
}

// groupRead is a read of one group answered with code and, per topic,
// partition -> offset.
func groupRead(code int16, topics map[string]map[int32]int64) *kmsg.OffsetFetchResponse {
	resp := kmsg.NewPtrOffsetFetchResponse()
	g := kmsg.NewOffsetFetchResponseGroup()
	g.Group, g.ErrorCode = "g", code
	for topic, parts := range topics {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic = topic
		for p, off := range parts {
			rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			rp.Partition, rp.Offset = p, off
			rt.Partitions = append(rt.Partitions, rp)
		}
		g.Topics = append(g.Topics, rt)
	}
	resp.Groups = []kmsg.OffsetFetchResponseGroup{g}
	return resp
}

var discard = slog.New(slog.DiscardHandler)

// TestReadBackUntilAnswered: a read that fails or is answered with a
// group error is retried; GROUP_ID_NOT_FOUND (no offsets at all) is an
// answer.
func TestReadBackUntilAnswered(t *testing.T) {
	notFound := groupRead(kerr.GroupIDNotFound.Code, nil)
	plane := &readPlane{answers: []readAnswer{
		{err: errors.New("connection lost")},
		{resp: groupRead(kerr.CoordinatorLoadInProgress.Code, nil)},
		{resp: notFound},
	}}
	got := ReadBack(context.Background(), plane, discard, ReadBackRequest("g", false, nil))
	if got != notFound || plane.reads != 3 {
		t.Fatalf("read back %v after %d reads, want the third answer", got, plane.reads)
	}
}

// TestReadBackEndsWithItsContext: reads that never succeed end, with nil,
// when the context ends.
func TestReadBackEndsWithItsContext(t *testing.T) {
	plane := &readPlane{answers: []readAnswer{{err: errors.New("connection lost")}}}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if got := ReadBack(ctx, plane, discard, ReadBackRequest("g", false, nil)); got != nil {
		t.Fatalf("read back %v from a plane that never answers", got)
	}
	if plane.reads < 2 {
		t.Fatalf("%d reads in 200ms, want retries", plane.reads)
	}
}

func commitRequest(version int16, topic string, id [16]byte, offsets map[int32]int64) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group = version, "g"
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic, t.TopicID = topic, id
	for p, off := range offsets {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, off
		t.Partitions = append(t.Partitions, rp)
	}
	req.Topics = []kmsg.OffsetCommitRequestTopic{t}
	return req
}

func commitErrorCode(t *testing.T, resp kmsg.Response) int16 {
	t.Helper()
	r := resp.(*kmsg.OffsetCommitResponse)
	code := r.Topics[0].Partitions[0].ErrorCode
	for _, rt := range r.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != code {
				t.Fatalf("partitions answered differently: %+v", r.Topics)
			}
		}
	}
	return code
}

// TestSettleCommit: a commit of unknown outcome is answered success when
// the read shows every offset it committed, COORDINATOR_NOT_AVAILABLE
// when one differs or is missing, or when no read is answered; the read
// names the commit's partitions, by topic id from OffsetCommit v10.
func TestSettleCommit(t *testing.T) {
	req := commitRequest(9, "in", [16]byte{}, map[int32]int64{0: 5, 1: 7})
	cases := []struct {
		name string
		read *kmsg.OffsetFetchResponse
		want int16
	}{
		{"stored", groupRead(0, map[string]map[int32]int64{"in": {0: 5, 1: 7, 2: 1}}), 0},
		{"one offset differs", groupRead(0, map[string]map[int32]int64{"in": {0: 5, 1: 6}}), kerr.CoordinatorNotAvailable.Code},
		{"one partition missing", groupRead(0, map[string]map[int32]int64{"in": {0: 5}}), kerr.CoordinatorNotAvailable.Code},
		{"another topic", groupRead(0, map[string]map[int32]int64{"out": {0: 5, 1: 7}}), kerr.CoordinatorNotAvailable.Code},
		{"no offsets", groupRead(kerr.GroupIDNotFound.Code, nil), kerr.CoordinatorNotAvailable.Code},
	}
	for _, tc := range cases {
		plane := &readPlane{answers: []readAnswer{{resp: tc.read}}}
		if got := commitErrorCode(t, SettleCommit(context.Background(), plane, discard, req)); got != tc.want {
			t.Errorf("%s: answered %v, want %v", tc.name, kerr.ErrorForCode(got), kerr.ErrorForCode(tc.want))
		}
		asked := plane.asked[0]
		if asked.Version != 8 || len(asked.Groups) != 1 || asked.Groups[0].Group != "g" ||
			len(asked.Groups[0].Topics) != 1 || asked.Groups[0].Topics[0].Topic != "in" || len(asked.Groups[0].Topics[0].Partitions) != 2 {
			t.Fatalf("%s: read %+v, want v8 of g's two partitions of in", tc.name, asked)
		}
	}

	id := [16]byte{9}
	byID := commitRequest(10, "", id, map[int32]int64{0: 3})
	read := groupRead(0, map[string]map[int32]int64{"": {0: 3}})
	read.Groups[0].Topics[0].TopicID = id
	plane := &readPlane{answers: []readAnswer{{resp: read}}}
	if got := commitErrorCode(t, SettleCommit(context.Background(), plane, discard, byID)); got != 0 {
		t.Fatalf("commit by topic id, stored: %v", kerr.ErrorForCode(got))
	}
	if v, tid := plane.asked[0].Version, plane.asked[0].Groups[0].Topics[0].TopicID; v != 10 || tid != id {
		t.Fatalf("read of a commit by topic id: v%d, topic id %x", v, tid)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	never := &readPlane{answers: []readAnswer{{err: errors.New("connection lost")}}}
	if got := commitErrorCode(t, SettleCommit(ctx, never, discard, req)); got != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("no read answered: %v, want COORDINATOR_NOT_AVAILABLE", kerr.ErrorForCode(got))
	}
}
