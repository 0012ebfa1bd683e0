package records

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
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

// TestEncoderIsEncodeRecord: an Encoder, after other bytes in its
// buffer, appends what EncodeRecord returns, the key first, for records
// and their tombstones.
func TestEncoderIsEncodeRecord(t *testing.T) {
	var enc Encoder
	buf := []byte("before")
	for _, r := range benchRecordList() {
		for _, rec := range []Record{r, {Key: r.Key}} {
			k, v := EncodeRecord(rec)
			start := len(buf)
			var kl int
			buf, kl = enc.Append(buf, rec)
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

// TestTagInPlace: a tagged field written in place is the bytes of one
// encoded on its own (encodeTag), for payloads whose length takes one,
// two and three bytes; and group metadata values with their tags
// (assignment configs of every size, null) decode as written.
func TestTagInPlace(t *testing.T) {
	for _, n := range []int{0, 1, 127, 128, 16383, 16384, 20000} {
		payload := bytes.Repeat([]byte{7}, n)
		var want, got writer
		want.b, got.b = []byte{1, 2}, []byte{1, 2}
		want.tags(encodeTag(5, func(w *writer) { w.b = append(w.b, payload...) }))
		got.uvarint(1)
		got.tag(5, func(w *writer) { w.b = append(w.b, payload...) })
		if !bytes.Equal(got.b, want.b) {
			t.Fatalf("payload of %d bytes: %x, want %x", n, got.b[:min(len(got.b), 16)], want.b[:min(len(want.b), 16)])
		}
	}
	long := strings.Repeat("v", 300)
	for _, v := range []RecordValue{
		StreamsGroupMetadataValue{Epoch: 3, MetadataHash: 9, ValidatedTopologyEpoch: -1, StoredDescriptionTopologyEpoch: -1, FailedDescriptionTopologyEpoch: -1},
		StreamsGroupMetadataValue{Epoch: 3, MetadataHash: 9, ValidatedTopologyEpoch: 2, LastAssignmentConfigsNull: true, StoredDescriptionTopologyEpoch: 4, FailedDescriptionTopologyEpoch: 5},
		StreamsGroupMetadataValue{Epoch: 3, ValidatedTopologyEpoch: -1, LastAssignmentConfigs: []KeyValue{{Key: "k", Value: long}, {Key: "n", Value: "1"}},
			StoredDescriptionTopologyEpoch: -1, FailedDescriptionTopologyEpoch: 1},
		ConsumerGroupMetadataValue{Epoch: 4, CreationTimeMs: -1},
		ConsumerGroupMetadataValue{Epoch: 4, MetadataHash: -7, CreationTimeMs: 1764720000000},
	} {
		var key RecordKey = StreamsGroupMetadataKey{GroupID: "g"}
		if _, ok := v.(ConsumerGroupMetadataValue); ok {
			key = ConsumerGroupMetadataKey{GroupID: "g"}
		}
		k, b := EncodeRecord(Record{Key: key, Value: v})
		got, err := DecodeRecord(k, b)
		if err != nil || !reflect.DeepEqual(got.Value, v) {
			t.Errorf("%+v decodes as %+v (%v)", v, got.Value, err)
		}
	}
}
