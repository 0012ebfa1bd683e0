package gateway

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/wire"
)

func openEmbedded(t *testing.T) *DataPlane {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d, err := Open(ctx, Config{Embedded: true, Partitions: 3,
		Advertise: func(int32) (string, int32, error) { return "127.0.0.1", 1, nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestTopicsCreateAndEndOffsets covers the event loop's metadata helpers:
// internal topic creation (idempotent), topic ids and partition counts,
// end offsets.
func TestTopicsCreateAndEndOffsets(t *testing.T) {
	d, ctx := openEmbedded(t), ctxT(t)
	spec := []TopicSpec{{Name: "app-store-changelog", Partitions: 4, ReplicationFactor: -1, Configs: map[string]string{"cleanup.policy": "compact"}}}
	for i := 0; i < 2; i++ { // the second call finds it existing: still nil
		res, err := d.CreateTopics(ctx, spec)
		if err != nil || res["app-store-changelog"] != nil {
			t.Fatalf("create #%d: %v %v", i, res, err)
		}
	}
	ts, err := d.Topics(ctx, "app-store-changelog", "missing")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]TopicInfo{}
	for _, ti := range ts {
		byName[ti.Name] = ti
	}
	ch := byName["app-store-changelog"]
	if ch.Err != nil || len(ch.Partitions) != 4 || ch.ID == [16]byte{} || len(ch.Partitions[0].Racks) != len(ch.Partitions[0].Replicas) {
		t.Fatalf("changelog metadata: %+v", ch)
	}
	if m := byName["missing"]; m.Err == nil {
		t.Fatalf("missing topic has no error: %+v", m)
	}
	p, err := kgo.NewClient(kgo.SeedBrokers(d.cfg.Bootstrap...), kgo.Dialer(d.mem.dialer), kgo.DefaultProduceTopic("app-store-changelog"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := 0; i < 3; i++ {
		if err := p.ProduceSync(ctx, &kgo.Record{Partition: 2, Key: []byte("k"), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	ends, err := d.EndOffsets(ctx, map[string][]int32{"app-store-changelog": {0, 2}})
	if err != nil || ends["app-store-changelog"][2] != 3 || ends["app-store-changelog"][0] != 0 {
		t.Fatalf("end offsets %v, %v", ends, err)
	}
}

// TestOffsetsRoundTripAcrossVersions: a commit by topic id (v10) is stored
// in the data plane's offsets log and read back by id (v10), by name in the
// batched form (v8) and the single-group form (v7); an unknown id is
// refused without being forwarded.
func TestOffsetsRoundTripAcrossVersions(t *testing.T) {
	d, ctx := openEmbedded(t), ctxT(t)
	if _, err := d.CreateTopics(ctx, []TopicSpec{{Name: "in", Partitions: 3, ReplicationFactor: -1}}); err != nil {
		t.Fatal(err)
	}
	ts, err := d.Topics(ctx, "in")
	if err != nil {
		t.Fatal(err)
	}
	id := ts[0].ID
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.SetVersion(10)
	commit.Group, commit.Generation, commit.MemberID = "app", 7, "member-1" // core validated these
	commit.Topics = []kmsg.OffsetCommitRequestTopic{
		{TopicID: id, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 1, Offset: 42, LeaderEpoch: -1}}},
		{TopicID: [16]byte{9}, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}}},
	}
	resp, err := d.CommitOffsets(ctx, commit)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[[16]byte]int16{}
	for _, tp := range resp.Topics {
		codes[tp.TopicID] = tp.Partitions[0].ErrorCode
	}
	if resp.Version != 10 || codes[id] != 0 || codes[[16]byte{9}] != kerr.UnknownTopicID.Code {
		t.Fatalf("commit response v%d: %+v", resp.Version, resp.Topics)
	}

	v10 := kmsg.NewPtrOffsetFetchRequest()
	v10.SetVersion(10)
	v10.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "app", Topics: []kmsg.OffsetFetchRequestGroupTopic{{TopicID: id, Partitions: []int32{1}}}}}
	r10, err := d.FetchOffsets(ctx, v10)
	if err != nil {
		t.Fatal(err)
	}
	if g := r10.Groups; len(g) != 1 || g[0].Topics[0].TopicID != id || g[0].Topics[0].Partitions[0].Offset != 42 {
		t.Fatalf("v10 fetch: %+v", r10.Groups)
	}
	v8 := kmsg.NewPtrOffsetFetchRequest()
	v8.SetVersion(8)
	v8.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "app", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "in", Partitions: []int32{1}}}}}
	r8, err := d.FetchOffsets(ctx, v8)
	if err != nil || r8.Groups[0].Topics[0].Topic != "in" || r8.Groups[0].Topics[0].Partitions[0].Offset != 42 {
		t.Fatalf("v8 fetch: %+v %v", r8, err)
	}
	v7 := kmsg.NewPtrOffsetFetchRequest()
	v7.SetVersion(7)
	v7.Group = "app"
	v7.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "in", Partitions: []int32{1, 2}}}
	r7, err := d.FetchOffsets(ctx, v7)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int32]int64{}
	for _, p := range r7.Topics[0].Partitions {
		got[p.Partition] = p.Offset
	}
	if r7.Topics[0].Topic != "in" || got[1] != 42 || got[2] != -1 {
		t.Fatalf("v7 fetch: %+v", r7.Topics)
	}

	del := kmsg.NewPtrOffsetDeleteRequest()
	del.Group = "app"
	del.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "in", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 1}}}}
	dr, err := d.DeleteOffsets(ctx, del)
	if err != nil || dr.ErrorCode != 0 || dr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("delete: %+v %v", dr, err)
	}
	r8, err = d.FetchOffsets(ctx, v8)
	if err != nil || r8.Groups[0].Topics[0].Partitions[0].Offset != -1 {
		t.Fatalf("after delete: %+v %v", r8, err)
	}
}

// TestTxnOffsetCommitIsTransactional: an allowed TxnOffsetCommit lands in
// the data plane inside the producer's transaction: invisible before
// EndTxn(commit), visible after.
func TestTxnOffsetCommitIsTransactional(t *testing.T) {
	d, ctx := openEmbedded(t), ctxT(t)
	if _, err := d.CreateTopics(ctx, []TopicSpec{{Name: "in", Partitions: 1, ReplicationFactor: -1}}); err != nil {
		t.Fatal(err)
	}
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID, ip.TransactionTimeoutMillis = kmsg.StringPtr("tx-1"), 60000
	ipr, err := ip.RequestWith(ctx, d.Admin())
	if err != nil || ipr.ErrorCode != 0 {
		t.Fatalf("init producer id: %+v %v", ipr, err)
	}
	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = "tx-1", ipr.ProducerID, ipr.ProducerEpoch, "app"
	if r, err := ao.RequestWith(ctx, d.Admin()); err != nil || r.ErrorCode != 0 {
		t.Fatalf("add offsets to txn: %+v %v", r, err)
	}
	tc := kmsg.NewPtrTxnOffsetCommitRequest()
	tc.SetVersion(4)
	tc.TransactionalID, tc.Group, tc.ProducerID, tc.ProducerEpoch = "tx-1", "app", ipr.ProducerID, ipr.ProducerEpoch
	tc.Generation, tc.MemberID = 3, "member-1" // validated by core, stripped for the data plane
	tc.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "in", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 17, LeaderEpoch: -1}}}}
	tr, err := d.TxnCommitOffsets(ctx, tc)
	if err != nil || tr.Version != 4 || tr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("txn offset commit: %+v %v", tr, err)
	}
	fetch := func() int64 {
		f := kmsg.NewPtrOffsetFetchRequest()
		f.SetVersion(8)
		f.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "app", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "in", Partitions: []int32{0}}}}}
		r, err := d.FetchOffsets(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Groups) == 1 && r.Groups[0].ErrorCode == kerr.GroupIDNotFound.Code {
			return -1 // kfake: a group with only pending offsets does not exist yet
		}
		if len(r.Groups) != 1 || len(r.Groups[0].Topics) != 1 {
			t.Fatalf("fetch: %+v", r)
		}
		return r.Groups[0].Topics[0].Partitions[0].Offset
	}
	if o := fetch(); o != -1 {
		t.Fatalf("offset visible before commit: %d", o)
	}
	et := kmsg.NewPtrEndTxnRequest()
	et.TransactionalID, et.ProducerID, et.ProducerEpoch, et.Commit = "tx-1", ipr.ProducerID, ipr.ProducerEpoch, true
	if r, err := et.RequestWith(ctx, d.Admin()); err != nil || r.ErrorCode != 0 {
		t.Fatalf("end txn: %+v %v", r, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for fetch() != 17 {
		if time.Now().After(deadline) {
			t.Fatal("committed transactional offset never became visible")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOffsetsOnlyGroups: groups whose offsets live in the data plane are
// listed, and deleting them deletes their offsets.
func TestOffsetsOnlyGroups(t *testing.T) {
	d, ctx := openEmbedded(t), ctxT(t)
	if _, err := d.CreateTopics(ctx, []TopicSpec{{Name: "in", Partitions: 1, ReplicationFactor: -1}}); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"g1", "g2"} {
		c := kmsg.NewPtrOffsetCommitRequest()
		c.SetVersion(9)
		c.Group = g
		c.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "in", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 5, LeaderEpoch: -1}}}}
		if r, err := d.CommitOffsets(ctx, c); err != nil || r.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("commit %s: %+v %v", g, r, err)
		}
	}
	groups, err := d.OffsetsOnlyGroups(ctx)
	if err != nil || len(groups) != 2 {
		t.Fatalf("groups %v, %v", groups, err)
	}
	res, err := d.DeleteGroupOffsets(ctx, []string{"g1", "never-existed"})
	if err != nil || res["g1"] != nil || res["never-existed"] != nil {
		t.Fatalf("delete: %v %v", res, err)
	}
	if groups, _ := d.OffsetsOnlyGroups(ctx); len(groups) != 1 || groups[0] != "g2" {
		t.Fatalf("after delete: %v", groups)
	}
}

// TestCreateTopicsConfigsNeverNull: a created topic's null config list (as
// kfake sends it) becomes an empty list at v5+, as Kafka sends it; a topic
// with an error keeps its null list.
func TestCreateTopicsConfigsNeverNull(t *testing.T) {
	r := kmsg.NewPtrCreateTopicsResponse()
	r.Version = 7
	r.Topics = []kmsg.CreateTopicsResponseTopic{{Topic: "ok"}, {Topic: "bad", ErrorCode: 36},
		{Topic: "cfg", Configs: []kmsg.CreateTopicsResponseTopicConfig{{Name: "cleanup.policy", Source: -1}, {Name: "x", Source: 1}}}}
	nonNullTopicConfigs(r)
	if r.Topics[0].Configs == nil || r.Topics[1].Configs != nil {
		t.Fatalf("configs: ok %v, bad %v", r.Topics[0].Configs, r.Topics[1].Configs)
	}
	if c := r.Topics[2].Configs; c[0].Source != int8(kmsg.ConfigSourceDefaultConfig) || c[1].Source != 1 {
		t.Fatalf("config sources: %+v", c)
	}
	r.Version, r.Topics[0].Configs = 4, nil
	nonNullTopicConfigs(r)
	if r.Topics[0].Configs != nil {
		t.Fatal("v4 has no configs field, left as is")
	}
}

// TestDescribeTopicPartitionsELRNeverNull: kfake's null ELR lists become
// empty lists, as Kafka sends them.
func TestDescribeTopicPartitionsELRNeverNull(t *testing.T) {
	r := kmsg.NewPtrDescribeTopicPartitionsResponse()
	r.Topics = []kmsg.DescribeTopicPartitionsResponseTopic{{Partitions: []kmsg.DescribeTopicPartitionsResponseTopicPartition{{}, {EligibleLeaderReplicas: []int32{1}}}}}
	nonNullELR(r)
	ps := r.Topics[0].Partitions
	if ps[0].EligibleLeaderReplicas == nil || ps[0].LastKnownELR == nil || len(ps[1].EligibleLeaderReplicas) != 1 {
		t.Fatalf("partitions: %+v", ps)
	}
}

// TestTxnOffsetCommitForwardedOnce: a TxnOffsetCommit the cluster answers
// COORDINATOR_NOT_AVAILABLE (Kafka 4.4 does so for a producer whose
// transaction it cannot verify) is forwarded once and the cluster's answer
// goes back to the client, which retries as Kafka's clients do; it is not
// retried here until the client's own request has timed out.
func TestTxnOffsetCommitForwardedOnce(t *testing.T) {
	d, ctx := openEmbedded(t), ctxT(t)
	if _, err := d.CreateTopics(ctx, []TopicSpec{{Name: "in", Partitions: 1, ReplicationFactor: -1}}); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	d.cluster.ControlKey(int16(kmsg.TxnOffsetCommit), func(req kmsg.Request) (kmsg.Response, error, bool) {
		d.cluster.KeepControl()
		calls.Add(1)
		resp := wire.ErrorResponse(req, kerr.CoordinatorNotAvailable.Code)
		return resp, nil, true
	})
	tc := kmsg.NewPtrTxnOffsetCommitRequest()
	tc.SetVersion(4)
	tc.TransactionalID, tc.Group, tc.ProducerID, tc.ProducerEpoch, tc.Generation = "tx", "app", 1, 0, -1
	tc.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "in", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 17, LeaderEpoch: -1}}}}
	tr, err := d.TxnCommitOffsets(ctx, tc)
	if err != nil {
		t.Fatalf("txn offset commit: %v", err)
	}
	if code := tr.Topics[0].Partitions[0].ErrorCode; code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("the client got %v, the cluster answered COORDINATOR_NOT_AVAILABLE", kerr.ErrorForCode(code))
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the cluster got the commit %d times, want once", n)
	}
}

// TestByNameOffsetsOfUnlearnedTopics: requests that name topics by name
// (OffsetCommit v9, TxnOffsetCommit v5, OffsetFetch v9 and v7) are
// answered by name as Kafka 4.4 answers them, though the data plane
// speaks the topic-id versions upstream: a topic the data plane has but
// the gateway has not learned yet is committed and read back; a topic the
// data plane does not have is UNKNOWN_TOPIC_OR_PARTITION for a commit
// and "no offset" for a fetch, under the request's name — not
// UNKNOWN_TOPIC_ID under an empty name, which a zero id sent upstream at
// v10 came back as; so is a topic deleted since the gateway learned it.
func TestByNameOffsetsOfUnlearnedTopics(t *testing.T) {
	d, ctx := openEmbedded(t), ctxT(t)
	if _, err := d.CreateTopics(ctx, []TopicSpec{{Name: "fresh", Partitions: 1, ReplicationFactor: -1}}); err != nil {
		t.Fatal(err)
	}
	if d.knownTopic("fresh") {
		t.Fatal("test premise: the gateway learned the topic at its creation")
	}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.SetVersion(9)
	commit.Group, commit.Generation = "app", -1
	for _, name := range []string{"fresh", "missing"} {
		commit.Topics = append(commit.Topics, kmsg.OffsetCommitRequestTopic{Topic: name, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 5, LeaderEpoch: -1}}})
	}
	resp, err := d.CommitOffsets(ctx, commit)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int16{}
	for _, tp := range resp.Topics {
		got[tp.Topic] = tp.Partitions[0].ErrorCode
	}
	if len(got) != 2 || got["fresh"] != 0 || got["missing"] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("v9 commit answered %+v, want fresh committed and missing UNKNOWN_TOPIC_OR_PARTITION", resp.Topics)
	}

	txn := kmsg.NewPtrTxnOffsetCommitRequest()
	txn.SetVersion(5)
	txn.TransactionalID, txn.Group, txn.ProducerID, txn.ProducerEpoch, txn.Generation = "tx", "app", 1, 0, -1
	txn.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "missing", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 5, LeaderEpoch: -1}}}}
	tr, err := d.TxnCommitOffsets(ctx, txn)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Topics) != 1 || tr.Topics[0].Topic != "missing" || tr.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("v5 transactional commit answered %+v, want missing UNKNOWN_TOPIC_OR_PARTITION", tr.Topics)
	}

	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.SetVersion(9)
	fetch.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "app", MemberEpoch: -1, Topics: []kmsg.OffsetFetchRequestGroupTopic{
		{Topic: "fresh", Partitions: []int32{0}}, {Topic: "missing", Partitions: []int32{0}},
	}}}
	fr, err := d.FetchOffsets(ctx, fetch)
	if err != nil {
		t.Fatal(err)
	}
	offsets := map[string]string{}
	for _, tp := range fr.Groups[0].Topics {
		p := tp.Partitions[0]
		offsets[tp.Topic] = fmt.Sprintf("%d/%v", p.Offset, kerr.ErrorForCode(p.ErrorCode))
	}
	if want := map[string]string{"fresh": "5/<nil>", "missing": "-1/<nil>"}; fmt.Sprint(offsets) != fmt.Sprint(want) {
		t.Fatalf("v9 fetch answered %v, want %v", offsets, want)
	}
	v7 := kmsg.NewPtrOffsetFetchRequest()
	v7.SetVersion(7)
	v7.Group = "app"
	v7.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "missing", Partitions: []int32{0}}}
	r7, err := d.FetchOffsets(ctx, v7)
	if err != nil {
		t.Fatal(err)
	}
	if len(r7.Topics) != 1 || r7.Topics[0].Topic != "missing" || r7.Topics[0].Partitions[0].Offset != -1 || r7.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("v7 fetch answered %+v, want missing with no offset", r7.Topics)
	}

	// A topic deleted after the gateway learned it: once the topic poll's
	// listing (Topics with no names) has seen it gone, a by-name commit is
	// answered as of an unknown topic, not sent upstream under its old id.
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.TopicNames = []string{"fresh"}
	del.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr("fresh")}}
	if dr, err := del.RequestWith(ctx, d.Admin()); err != nil || dr.Topics[0].ErrorCode != 0 {
		t.Fatalf("delete topic: %+v %v", dr, err)
	}
	if _, err := d.Topics(ctx); err != nil {
		t.Fatal(err)
	}
	commit.Topics = commit.Topics[:1]
	if resp, err = d.CommitOffsets(ctx, commit); err != nil {
		t.Fatal(err)
	}
	if tp := resp.Topics[0]; tp.Topic != "fresh" || tp.Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("v9 commit of a deleted topic answered %+v, want fresh UNKNOWN_TOPIC_OR_PARTITION", resp.Topics)
	}
}

// TestOffsetForwardsDoNotQueueBehindEachOther: while the cluster holds a
// forwarded OffsetCommit of one group (as a broker serving one request of
// a connection at a time holds everything after it on that connection),
// an OffsetFetch and an OffsetCommit of other groups are answered.
func TestOffsetForwardsDoNotQueueBehindEachOther(t *testing.T) {
	d, ctx := openEmbedded(t), ctxT(t)
	if _, err := d.CreateTopics(ctx, []TopicSpec{{Name: "in", Partitions: 2, ReplicationFactor: -1}}); err != nil {
		t.Fatal(err)
	}
	held, release := make(chan struct{}), make(chan struct{})
	d.cluster.ControlKey(int16(kmsg.OffsetCommit), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if req.(*kmsg.OffsetCommitRequest).Group != "slow" {
			d.cluster.KeepControl()
			return nil, nil, false
		}
		close(held)
		d.cluster.SleepControl(func() { <-release })
		return nil, nil, false
	})
	commit := func(group string, offset int64) <-chan error {
		out := make(chan error, 1)
		go func() {
			req := kmsg.NewPtrOffsetCommitRequest()
			req.SetVersion(9)
			req.Group, req.Generation = group, -1
			req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "in", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: offset, LeaderEpoch: -1}}}}
			resp, err := d.CommitOffsets(ctx, req)
			if err == nil {
				err = kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
			}
			out <- err
		}()
		return out
	}
	slow := commit("slow", 5)
	<-held
	fast := commit("fast", 7)
	fetched := make(chan error, 1)
	go func() {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.SetVersion(8)
		req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "other", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "in", Partitions: []int32{0}}}}}
		_, err := d.FetchOffsets(ctx, req)
		fetched <- err
	}()
	for name, done := range map[string]<-chan error{"commit": fast, "fetch": fetched} {
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s of another group: %v", name, err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%s of another group waited for the held commit", name)
		}
	}
	close(release)
	if err := <-slow; err != nil {
		t.Fatalf("held commit: %v", err)
	}
}
