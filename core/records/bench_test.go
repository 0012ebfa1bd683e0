package records

import (
	"bytes"
	"fmt"
	"testing"
)

// benchRecords is benchRecordList encoded once.
func benchRecords() (keys, values [][]byte) {
	for _, r := range benchRecordList() {
		k, v := EncodeRecord(r)
		keys, values = append(keys, k), append(values, v)
	}
	return keys, values
}

// benchRecordList is a fixed mix of one steady streams group, one
// consumer group and one classic group as BenchmarkGroupStateReplay's
// fleet holds them (interop/statereplay_bench_test.go).
func benchRecordList() []Record {
	var recs []Record
	const members = 10
	g := "streams-app-000042"
	for i := 0; i < members; i++ {
		m := fmt.Sprintf("QmVuY2htYXJrTWVtYmVy%02d", i)
		proc := fmt.Sprintf("6f1c2a4e-0b1d-4c1e-9a5b-%012d", i)
		recs = append(recs,
			Record{Key: StreamsGroupMemberMetadataKey{GroupID: g, MemberID: m}, Value: StreamsGroupMemberMetadataValue{
				ClientID: g + "-" + proc + "-StreamThread-1-consumer", ClientHost: "/10.1.2.3", RebalanceTimeoutMs: 300000,
				ProcessID: proc, ClientTags: []KeyValue{}}},
			Record{Key: StreamsGroupTargetAssignmentMemberKey{GroupID: g, MemberID: m}, Value: StreamsGroupTargetAssignmentMemberValue{
				ActiveTasks: []TaskIDs{{SubtopologyID: "0", Partitions: []int32{int32(i)}}}, StandbyTasks: []TaskIDs{{SubtopologyID: "0", Partitions: []int32{int32(i+1) % members}}},
				WarmupTasks: []TaskIDs{}}},
			Record{Key: StreamsGroupCurrentMemberAssignmentKey{GroupID: g, MemberID: m}, Value: StreamsGroupCurrentMemberAssignmentValue{
				MemberEpoch: 11, PreviousMemberEpoch: 10, ActiveTasks: []TaskIDs{{SubtopologyID: "0", Partitions: []int32{int32(i)}, AssignmentEpochs: []int32{11}}},
				StandbyTasks: []TaskIDs{}, WarmupTasks: []TaskIDs{}, ActiveTasksPendingRevocation: []TaskIDs{}, StandbyTasksPendingRevocation: []TaskIDs{},
				WarmupTasksPendingRevocation: []TaskIDs{}}})
	}
	recs = append(recs,
		Record{Key: StreamsGroupTopologyKey{GroupID: g}, Value: StreamsGroupTopologyValue{Subtopologies: []Subtopology{{
			SubtopologyID: "0", SourceTopics: []string{g + "-input"}, StateChangelogTopics: []TopicInfo{{Name: g + "-store-changelog"}}}}}},
		Record{Key: StreamsGroupMetadataKey{GroupID: g}, Value: StreamsGroupMetadataValue{Epoch: 11, MetadataHash: 99,
			LastAssignmentConfigs: []KeyValue{{Key: "num.standby.replicas", Value: "1"}}, ValidatedTopologyEpoch: -1,
			StoredDescriptionTopologyEpoch: -1, FailedDescriptionTopologyEpoch: -1}},
		Record{Key: StreamsGroupTargetAssignmentMetadataKey{GroupID: g}, Value: StreamsGroupTargetAssignmentMetadataValue{AssignmentEpoch: 11, AssignmentTimestamp: 1764720000000}})
	c := "consumer-app-000042"
	topic := [16]byte{1, 2, 3}
	for i := 0; i < members; i++ {
		m := fmt.Sprintf("Q29uc3VtZXJNZW1iZXIwMA%02d", i)
		tps := []TopicPartitions{{TopicID: topic, Partitions: []int32{int32(i)}}}
		recs = append(recs,
			Record{Key: ConsumerGroupMemberMetadataKey{GroupID: c, MemberID: m}, Value: ConsumerGroupMemberMetadataValue{
				ClientID: c + "-1", ClientHost: "/10.1.2.4", SubscribedTopicNames: []string{c + "-input"}, RebalanceTimeoutMs: 300000}},
			Record{Key: ConsumerGroupTargetAssignmentMemberKey{GroupID: c, MemberID: m}, Value: ConsumerGroupTargetAssignmentMemberValue{TopicPartitions: tps}},
			Record{Key: ConsumerGroupCurrentMemberAssignmentKey{GroupID: c, MemberID: m}, Value: ConsumerGroupCurrentMemberAssignmentValue{
				MemberEpoch: 11, PreviousMemberEpoch: 10, AssignedPartitions: tps, PartitionsPendingRevocation: []TopicPartitions{}}})
	}
	recs = append(recs,
		Record{Key: ConsumerGroupMetadataKey{GroupID: c}, Value: ConsumerGroupMetadataValue{Epoch: 11, MetadataHash: 7, CreationTimeMs: -1}},
		Record{Key: ConsumerGroupTargetAssignmentMetadataKey{GroupID: c}, Value: ConsumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: 11}})
	proto, leader := "range", "m0"
	v := GroupMetadataValue{Version: GroupMetadataWriteVersion, ProtocolType: "consumer", Generation: 5, Protocol: &proto, Leader: &leader, CurrentStateTimestamp: 1}
	for i := 0; i < 3; i++ {
		v.Members = append(v.Members, GroupMetadataMember{MemberID: fmt.Sprintf("m%d", i), ClientID: "c", ClientHost: "/10.0.0.1",
			RebalanceTimeout: 300000, SessionTimeout: 45000, Subscription: make([]byte, 24), Assignment: make([]byte, 32)})
	}
	recs = append(recs, Record{Key: GroupMetadataKey{GroupID: "classic-app-000042"}, Value: v})
	return recs
}

// TestAppendRecordIsEncodeRecord: AppendRecord, after other bytes in
// its buffer, writes what EncodeRecord returns, the key first, for
// records and their tombstones.
func TestAppendRecordIsEncodeRecord(t *testing.T) {
	buf := []byte("before")
	for _, r := range benchRecordList() {
		for _, rec := range []Record{r, {Key: r.Key}} {
			k, v := EncodeRecord(rec)
			start := len(buf)
			var kl int
			buf, kl = AppendRecord(buf, rec)
			if got := buf[start : start+kl]; !bytes.Equal(got, k) {
				t.Fatalf("%T: key %x, EncodeRecord's %x", rec.Key, got, k)
			}
			if got := buf[start+kl:]; !bytes.Equal(got, v) || (v == nil) != (len(got) == 0) {
				t.Fatalf("%T: value %x, EncodeRecord's %x", rec.Key, got, v)
			}
		}
	}
	if string(buf[:6]) != "before" {
		t.Fatalf("the buffer's first bytes became %q", buf[:6])
	}
}

// BenchmarkDecodeRecord decodes the mix above in log order, with
// DecodeRecord and with a Decoder (as Coordinator.ReplayBytes does);
// ns/op and allocs/op are per record.
func BenchmarkDecodeRecord(b *testing.B) {
	keys, values := benchRecords()
	var d Decoder
	for _, bc := range []struct {
		name   string
		decode func(k, v []byte) (Record, error)
	}{{"DecodeRecord", DecodeRecord}, {"Decoder", d.Decode}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				i := n % len(keys)
				if _, err := bc.decode(keys[i], values[i]); err != nil {
					b.Fatal(err)
				}
				n++
			}
		})
	}
}
