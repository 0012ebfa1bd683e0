package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestErrorResponseEveryKeyAndVersion builds the error response of every
// kmsg request at every version, encodes it and decodes it back: none may
// panic, and a top-level ErrorCode, where the response has one, is set.
func TestErrorResponseEveryKeyAndVersion(t *testing.T) {
	for key := int16(0); key <= 200; key++ {
		req := kmsg.RequestForKey(key)
		if req == nil {
			continue
		}
		for v := int16(0); v <= req.MaxVersion(); v++ {
			req := kmsg.RequestForKey(key)
			req.SetVersion(v)
			resp := ErrorResponse(req, 35)
			frame := AppendResponse(nil, 1, resp)
			_, back, err := ParseResponse(frame[4:], req)
			if err != nil {
				t.Fatalf("%s v%d: error response does not decode: %v", kmsg.NameForKey(key), v, err)
			}
			if code, ok := topErrorCode(back); ok && code != 35 {
				t.Fatalf("%s v%d: top-level error code %d, want 35", kmsg.NameForKey(key), v, code)
			}
		}
	}
}

// TestErrorResponseMirrorsItems checks per-item mirroring on the shapes the
// group coordinator answers: partitions, group ids, coordinator keys.
func TestErrorResponseMirrorsItems(t *testing.T) {
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.SetVersion(9)
	oc.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 3}, {Partition: 5}}}}
	ocr := ErrorResponse(oc, 15).(*kmsg.OffsetCommitResponse)
	if len(ocr.Topics) != 1 || ocr.Topics[0].Topic != "t" || len(ocr.Topics[0].Partitions) != 2 ||
		ocr.Topics[0].Partitions[1].Partition != 5 || ocr.Topics[0].Partitions[1].ErrorCode != 15 {
		t.Fatalf("OffsetCommit not mirrored: %+v", ocr.Topics)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.SetVersion(5)
	dg.Groups = []string{"a", "b"}
	dgr := ErrorResponse(dg, 15).(*kmsg.DescribeGroupsResponse)
	if len(dgr.Groups) != 2 || dgr.Groups[1].Group != "b" || dgr.Groups[1].ErrorCode != 15 {
		t.Fatalf("DescribeGroups not mirrored: %+v", dgr.Groups)
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(4)
	fc.CoordinatorKeys = []string{"g1", "g2"}
	fcr := ErrorResponse(fc, 15).(*kmsg.FindCoordinatorResponse)
	if len(fcr.Coordinators) != 2 || fcr.Coordinators[0].Key != "g1" || fcr.Coordinators[0].ErrorCode != 15 {
		t.Fatalf("FindCoordinator not mirrored: %+v", fcr.Coordinators)
	}
	of := kmsg.NewPtrOffsetFetchRequest()
	of.SetVersion(8)
	of.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{4}}}}}
	ofr := ErrorResponse(of, 15).(*kmsg.OffsetFetchResponse)
	if len(ofr.Groups) != 1 || ofr.Groups[0].Group != "g" || ofr.Groups[0].ErrorCode != 15 ||
		ofr.Groups[0].Topics[0].Partitions[0].Partition != 4 {
		t.Fatalf("OffsetFetch v8 not mirrored: %+v", ofr.Groups)
	}
}

func topErrorCode(r kmsg.Response) (int16, bool) {
	switch r := r.(type) {
	case *kmsg.JoinGroupResponse:
		return r.ErrorCode, true
	case *kmsg.HeartbeatResponse:
		return r.ErrorCode, true
	case *kmsg.StreamsGroupHeartbeatResponse:
		return r.ErrorCode, true
	case *kmsg.ConsumerGroupHeartbeatResponse:
		return r.ErrorCode, true
	case *kmsg.ApiVersionsResponse:
		return r.ErrorCode, true
	}
	return 0, false
}
