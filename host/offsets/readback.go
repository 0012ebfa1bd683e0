package offsets

import (
	"context"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/wire"
)

// Bounds of the backoff between reads that settle a forward of unknown
// outcome.
const (
	readBackMin = 50 * time.Millisecond
	readBackMax = 2 * time.Second
)

// ReadBack reads req's offsets from plane until a read is answered (or
// ctx ends: nil). It settles a forward whose outcome is unknown: the data
// plane answers a group's offset requests in order, and the forward's
// connection is gone, so the answer shows what the forward wrote, if
// anything, and nothing of it lands later. Each failed read is logged to
// log, and the reads back off from 50 ms to 2 s.
func ReadBack(ctx context.Context, plane Plane, log *slog.Logger, req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	wait := readBackMin
	for {
		resp, err := plane.FetchOffsets(ctx, req)
		if err == nil && readAnswered(resp) {
			return resp
		}
		log.Warn("reading back offsets after a forward of unknown outcome failed; the group's offset requests wait",
			"group", req.Groups[0].Group, "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(2*wait, readBackMax)
	}
}

// readAnswered tells whether a read of one group's offsets was answered
// (no offsets at all counts: GROUP_ID_NOT_FOUND).
func readAnswered(resp *kmsg.OffsetFetchResponse) bool {
	if len(resp.Groups) != 1 {
		return false
	}
	code := resp.Groups[0].ErrorCode
	return code == 0 || code == kerr.GroupIDNotFound.Code
}

// ReadBackRequest is the read of group's offsets for parts (partitions by
// topic name, or by topic id when byID; none: the whole group).
func ReadBackRequest(group string, byID bool, parts []TopicParts) *kmsg.OffsetFetchRequest {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	if byID {
		req.Version = 10
	}
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = group
	for _, tp := range parts {
		t := kmsg.NewOffsetFetchRequestGroupTopic()
		t.Topic, t.TopicID, t.Partitions = tp.Topic, tp.ID, tp.Partitions
		g.Topics = append(g.Topics, t)
	}
	req.Groups = []kmsg.OffsetFetchRequestGroup{g}
	return req
}

// TopicParts names some partitions of one topic.
type TopicParts struct {
	Topic      string
	ID         [16]byte
	Partitions []int32
}

func commitParts(req *kmsg.OffsetCommitRequest) []TopicParts {
	var out []TopicParts
	for _, t := range req.Topics {
		tp := TopicParts{Topic: t.Topic, ID: t.TopicID}
		for _, p := range t.Partitions {
			tp.Partitions = append(tp.Partitions, p.Partition)
		}
		out = append(out, tp)
	}
	return out
}

// SettleCommit answers an OffsetCommit whose forward has an unknown
// outcome, once a read of plane shows it (ReadBack): success when every
// committed offset is stored, COORDINATOR_NOT_AVAILABLE (retriable) when
// not, or when ctx ended before a read was answered.
func SettleCommit(ctx context.Context, plane Plane, log *slog.Logger, req *kmsg.OffsetCommitRequest) kmsg.Response {
	read := ReadBack(ctx, plane, log, ReadBackRequest(req.Group, req.Version >= 10, commitParts(req)))
	if read == nil || !commitStored(req, read.Groups[0].Topics) {
		return wire.ErrorResponse(req, kerr.CoordinatorNotAvailable.Code)
	}
	return wire.ErrorResponse(req, 0)
}

// commitStored tells whether every offset of req is in read.
func commitStored(req *kmsg.OffsetCommitRequest, read []kmsg.OffsetFetchResponseGroupTopic) bool {
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if !hasOffset(read, t.Topic, t.TopicID, p.Partition, p.Offset) {
				return false
			}
		}
	}
	return true
}

func hasOffset(read []kmsg.OffsetFetchResponseGroupTopic, topic string, id [16]byte, partition int32, offset int64) bool {
	for _, rt := range read {
		if (topic == "" || rt.Topic != topic) && (id == [16]byte{} || rt.TopicID != id) {
			continue
		}
		for _, rp := range rt.Partitions {
			if rp.Partition == partition {
				return rp.ErrorCode == 0 && rp.Offset == offset
			}
		}
	}
	return false
}
