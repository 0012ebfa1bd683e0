package core

import (
	"testing"

	"github.com/coordhost/coordhost/core/records"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCommitByTopicID: OffsetCommit v10 and TxnOffsetCommit v6 name
// topics by id; an older-epoch commit for a task the member still holds
// must be judged on the topic's name (resolved from the topic metadata, as
// Kafka does from its metadata image), not refused as "not in the
// topology" — Kafka Streams under exactly-once treats that refusal as
// fencing and closes every task dirty.
func TestCommitByTopicID(t *testing.T) {
	c, _ := New(DefaultConfig())
	in := [16]byte{7}
	c.updateTopics(0, []TopicMetadata{{Name: "in", ID: in, Partitions: 2}})
	c.Commit()
	g := newStreamsGroup("g")
	g.topology = &records.StreamsGroupTopologyValue{Subtopologies: []records.Subtopology{{SubtopologyID: "0", SourceTopics: []string{"in"}}}}
	c.groups["g"] = g
	m := newStreamsMember("m")
	m.epoch, m.processID = 5, "p"
	m.assigned.active[TaskID{"0", 0}] = 3 // held since epoch 3
	g.swapMember(nil, m)

	txn := func(version int16, topic string, id [16]byte) int16 {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version, req.Group, req.MemberID, req.Generation = version, "g", "m", 4
		req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: topic, TopicID: id, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0}}}}
		return c.decideTxnOffsetCommit(req).ErrorCode
	}
	commit := func(topic string, id [16]byte) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.MemberID, req.Generation = 10, "g", "m", 4
		req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: topic, TopicID: id, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0}}}}
		d, _ := c.decideOffsetCommit(0, req)
		return d.ErrorCode
	}
	for _, tc := range []struct {
		what string
		got  int16
		want int16
	}{
		{"TxnOffsetCommit v5 by name", txn(5, "in", [16]byte{}), 0},
		{"TxnOffsetCommit v6 by id", txn(6, "", in), 0},
		{"TxnOffsetCommit v6, unknown id", txn(6, "", [16]byte{9}), kerr.StaleMemberEpoch.Code},
		{"OffsetCommit v10 by id", commit("", in), 0},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %v, want %v", tc.what, kerr.ErrorForCode(tc.got), kerr.ErrorForCode(tc.want))
		}
	}
}
