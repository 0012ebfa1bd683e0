package loop

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// unreadablePlane is an offsets store that cannot be read (a data plane
// still creating __consumer_offsets).
type unreadablePlane struct{ *fakePlane }

func (unreadablePlane) FetchOffsets(context.Context, *kmsg.OffsetFetchRequest) (*kmsg.OffsetFetchResponse, error) {
	return nil, kerr.CoordinatorNotAvailable
}

// TestUnreadableOffsetsAnswerLoadInProgress: when the data plane cannot
// answer an OffsetFetch, the coordinator answers
// COORDINATOR_LOAD_IN_PROGRESS (retry the fetch), never
// COORDINATOR_NOT_AVAILABLE, on which a Java consumer forgets its
// coordinator and, closed before finding it again, sends no LeaveGroup.
func TestUnreadableOffsetsAnswerLoadInProgress(t *testing.T) {
	l := gateLoop(t, &fakePlane{stored: map[string]int64{}}, &skewClock{})
	ownAll(t, l, "g", "A")
	l.offs.plane = unreadablePlane{}
	for _, version := range []int16{7, 9} {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = version
		if version < 8 {
			req.Group = "g"
			req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "in", Partitions: []int32{0}}}
		} else {
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = "g"
			g.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: "in", Partitions: []int32{0}}}
			req.Groups = []kmsg.OffsetFetchRequestGroup{g}
		}
		resp := handleReq(t, l, req).(*kmsg.OffsetFetchResponse)
		code := resp.ErrorCode
		if version >= 8 {
			if len(resp.Groups) != 1 {
				t.Fatalf("v%d: %d groups answered", version, len(resp.Groups))
			}
			code = resp.Groups[0].ErrorCode
		}
		if code != kerr.CoordinatorLoadInProgress.Code {
			t.Errorf("v%d: answered %v, want COORDINATOR_LOAD_IN_PROGRESS", version, kerr.ErrorForCode(code))
		}
	}
}
