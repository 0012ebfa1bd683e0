package host_test

import (
	"context"
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
	member := joinOneMember(ctx, t, cl, "g")
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
	if g := dr.Groups[0]; g.ErrorCode != 0 || g.ProtocolType != "consumer" || len(g.Members) != 1 || g.Members[0].MemberID != member {
		t.Fatalf("group after restart: %v %+v", kerr.ErrorForCode(g.ErrorCode), g)
	}
	if dp.saw(kmsg.InitProducerID) == 0 || dp.saw(kmsg.EndTxn) == 0 {
		t.Fatalf("the state topic was not written in transactions (InitProducerId %d, EndTxn %d)", dp.saw(kmsg.InitProducerID), dp.saw(kmsg.EndTxn))
	}
}
