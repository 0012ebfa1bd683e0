package core

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func consumerSampleRecords() []Record {
	inst, asg := "i1", "uniform"
	tps := []TopicPartitions{{TopicID: topicID("a"), Partitions: []int32{0, 2}, AssignmentEpochs: []int32{3, 4}}}
	return []Record{
		{Key: ConsumerGroupMetadataKey{"g"}, Value: ConsumerGroupMetadataValue{Epoch: 5, MetadataHash: 77, CreationTimeMs: -1}},
		{Key: ConsumerGroupMetadataKey{"g"}, Value: ConsumerGroupMetadataValue{Epoch: 1, CreationTimeMs: 1234}},
		{Key: ConsumerGroupMetadataKey{"g"}},
		{Key: ConsumerGroupPartitionMetadataKey{"g"}},
		{Key: ConsumerGroupMemberMetadataKey{"g", "m"}, Value: ConsumerGroupMemberMetadataValue{InstanceID: &inst,
			ClientID: "c", ClientHost: "/h", SubscribedTopicNames: []string{"a", "b"}, RebalanceTimeoutMs: 30000, ServerAssignor: &asg}},
		{Key: ConsumerGroupTargetAssignmentMetadataKey{"g"}, Value: ConsumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: 5, AssignmentTimestamp: 9}},
		{Key: ConsumerGroupTargetAssignmentMemberKey{"g", "m"}, Value: ConsumerGroupTargetAssignmentMemberValue{
			TopicPartitions: []TopicPartitions{{TopicID: topicID("a"), Partitions: []int32{1}}}}},
		{Key: ConsumerGroupCurrentMemberAssignmentKey{"g", "m"}, Value: ConsumerGroupCurrentMemberAssignmentValue{
			MemberEpoch: 4, PreviousMemberEpoch: 3, State: 2, AssignedPartitions: tps, PartitionsPendingRevocation: []TopicPartitions{}}},
		{Key: ConsumerGroupRegularExpressionKey{"g", "rx"}, Value: ConsumerGroupRegularExpressionValue{
			Topics: []string{"a"}, Version: 3, Timestamp: 9}},
		{Key: ConsumerGroupRegularExpressionKey{"g", "rx"}},
	}
}

// TestConsumerRecordBytes checks the byte layout of consumer records
// against Kafka's schemas: keys are int16 type + classic strings; values
// are int16 version 0 + flexible fields + tagged fields.
func TestConsumerRecordBytes(t *testing.T) {
	recs := consumerSampleRecords()
	idA := topicID("a")
	cases := []struct {
		rec        Record
		key, value string
	}{
		// type 3, "g"; epoch 5, tags: 1 field, tag 0, 8 bytes hash 77.
		{recs[0], "0003" + "00016" + "7", "0000" + "00000005" + "01" + "00" + "08" + "000000000000004d"},
		// type 6; epoch 5, tag 0 timestamp 9.
		{recs[5], "0006" + "000167", "0000" + "00000005" + "01" + "00" + "08" + "0000000000000009"},
		// type 7, "g","m"; one topic: uuid, [1], no tags; no tags.
		{recs[6], "0007" + "000167" + "00016d", "0000" + "02" + hex.EncodeToString(idA[:]) + "02" + "00000001" + "00" + "00"},
		// type 16 (key version 16), "g","rx"; topics ["a"], version 3, timestamp 9, no tags.
		{recs[8], "0010" + "000167" + "00027278", "0000" + "02" + "0261" + "0000000000000003" + "0000000000000009" + "00"},
		{recs[9], "0010" + "000167" + "00027278", ""},
	}
	for _, tc := range cases {
		k, v := EncodeRecord(tc.rec)
		if hex.EncodeToString(k) != tc.key || hex.EncodeToString(v) != tc.value {
			t.Errorf("%s:\n key %x want %s\n value %x want %s", RecordTypeName(tc.rec.Key.RecordType()), k, tc.key, v, tc.value)
		}
	}
	// Type 8 writes the assignment epochs as tagged field 0 of each topic.
	_, v := EncodeRecord(recs[7])
	epochs := "01" + "00" + "09" + "03" + "00000003" + "00000004" // one tag: 0, 9 bytes
	if !bytes.Contains(v, mustHex(epochs)) {
		t.Errorf("type 8 value %x lacks the assignment-epoch tag %s", v, epochs)
	}
}

// TestConsumerRecordsRoundTrip: every sample decodes to itself.
func TestConsumerRecordsRoundTrip(t *testing.T) {
	for _, rec := range consumerSampleRecords() {
		k, v := EncodeRecord(rec)
		got, err := DecodeRecord(k, v)
		if err != nil {
			t.Fatalf("%s: %v", RecordTypeName(rec.Key.RecordType()), err)
		}
		if !reflect.DeepEqual(got, rec) {
			t.Errorf("%s: got %#v want %#v", RecordTypeName(rec.Key.RecordType()), got, rec)
		}
	}
}

// FuzzConsumerReplayThenServe replays consumer records in any order (a
// pool of samples and records a live scenario wrote) and then serves
// heartbeats, leaves, ticks, a describe and a delete: a log in any order
// must never make the coordinator panic.
func FuzzConsumerReplayThenServe(f *testing.F) {
	h := newCHarness(f, consumerTestConfig())
	r := h.hb(joinReq("g", "m", "a", "b"))
	inst := "i1"
	j := joinReq("g", "s", "a")
	j.InstanceID = &inst
	h.hb(j)
	h.hb(ackReq("g", "m", r.MemberEpoch, r.Assignment.Topics))
	h.hb(ackReq("g", "m", -1, nil))
	pool := append(consumerSampleRecords(), h.log...)
	f.Add([]byte{0, 4, 5, 6, 7})
	f.Add([]byte{8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
	f.Add([]byte{20, 19, 18, 3, 2, 1})
	f.Fuzz(func(t *testing.T, order []byte) {
		if len(order) > 64 {
			order = order[:64]
		}
		c, _ := New(consumerTestConfig())
		c.UpdateTopics(0, []TopicMetadata{{Name: "a", ID: topicID("a"), Partitions: 4}, {Name: "b", ID: topicID("b"), Partitions: 2}})
		c.Commit()
		for _, b := range order {
			_ = c.Replay(pool[int(b)%len(pool)])
		}
		c.Loaded(1)
		c.Commit()
		inst := "i1"
		for i, epoch := range []int32{0, 1, 3, -2, 0, -1} {
			for _, id := range []string{"m", "s"} {
				req := joinReq("g", id, "a")
				if id == "s" {
					req.InstanceID = &inst
				}
				if epoch != 0 {
					req = ackReq("g", id, epoch, nil)
					if id == "s" {
						req.InstanceID = &inst
					}
				}
				c.ConsumerGroupHeartbeat(int64(10+i), RequestID(i), ClientInfo{}, req)
				c.Commit()
			}
		}
		c.Tick(1 << 40)
		c.Commit()
		c.ConsumerGroupDescribe(&kmsg.ConsumerGroupDescribeRequest{Version: 1, Groups: []string{"g"}})
		c.DeleteGroups(1<<40, 9, &kmsg.DeleteGroupsRequest{Groups: []string{"g"}})
		c.Commit()
		_ = c.Dump()
	})
}
