package host_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host"
)

// TestStoreKindKafka: with store.kind=kafka a group's membership is written
// to the state topic of the external cluster, not to a local store file,
// and a restarted coordhost replays it from there.
func TestStoreKindKafka(t *testing.T) {
	dp := newObservedCluster(t, kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	dir := t.TempDir()
	args := []string{"--dataplane.mode=external", dp.bootstrap(), "--store.kind=kafka", "--store.partitions=3"}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	srv := startLoopHost(t, dir, args...)
	cl := newClient(t, srv.KafkaAddr())
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = "g", 30000, 30000, "consumer"
	proto := kmsg.NewJoinGroupRequestProtocol()
	proto.Name = "range"
	join.Protocols = append(join.Protocols, proto)
	jr, err := join.RequestWith(ctx, cl)
	if err == nil && errors.Is(kerr.ErrorForCode(jr.ErrorCode), kerr.MemberIDRequired) {
		join.MemberID = jr.MemberID
		jr, err = join.RequestWith(ctx, cl)
	}
	if err != nil || jr.ErrorCode != 0 || jr.Generation != 1 {
		t.Fatalf("join: %v %v generation %d", err, kerr.ErrorForCode(jr.ErrorCode), jr.Generation)
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = "g", jr.MemberID, jr.Generation
	sync.ProtocolType, sync.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	sa := kmsg.NewSyncGroupRequestGroupAssignment()
	sa.MemberID, sa.MemberAssignment = jr.MemberID, []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	sync.GroupAssignment = append(sync.GroupAssignment, sa)
	if sr, err := sync.RequestWith(ctx, cl); err != nil || sr.ErrorCode != 0 {
		t.Fatalf("sync: %v %+v", err, sr)
	}
	stopHost(t, srv)
	if _, err := os.Stat(filepath.Join(dir, host.StoreFile)); err == nil {
		t.Fatalf("store.kind=kafka wrote %s", host.StoreFile)
	}
	srv = startLoopHost(t, dir, args...)
	describe := kmsg.NewPtrDescribeGroupsRequest()
	describe.Groups = []string{"g"}
	dr, err := describe.RequestWith(ctx, newClient(t, srv.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	if g := dr.Groups[0]; g.ErrorCode != 0 || g.ProtocolType != "consumer" || len(g.Members) != 1 || g.Members[0].MemberID != jr.MemberID {
		t.Fatalf("group after restart: %v %+v", kerr.ErrorForCode(g.ErrorCode), g)
	}
	if dp.saw(kmsg.InitProducerID) == 0 || dp.saw(kmsg.EndTxn) == 0 {
		t.Fatalf("the state topic was not written in transactions (InitProducerId %d, EndTxn %d)", dp.saw(kmsg.InitProducerID), dp.saw(kmsg.EndTxn))
	}
}
