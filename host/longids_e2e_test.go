package host_test

import (
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coordhost/coordhost/host"
	"github.com/coordhost/coordhost/host/loop"
)

// TestLongIDsStored: a streams group whose group id and member id are each
// ~20 KB (legal for Kafka, together over the store's 32 KiB key limit)
// joins and gets its tasks, while another group sharing its store
// partition (and so its store rounds) heartbeats without an error; after
// a restart on the same data directory the member is still in the group
// with its epoch and keeps heartbeating, and `coordhost repair` keeps it.
func TestLongIDsStored(t *testing.T) {
	dir := t.TempDir()
	srv := startLoopHost(t, dir, "--store.partitions=1")
	ctx := timeout(t)
	if err := createTopic(ctx, newClient(t, srv.KafkaAddr()), "long-in", 2); err != nil {
		t.Fatal(err)
	}
	group, member := strings.Repeat("g", 20000), strings.Repeat("m", 20000)
	canary := newStreamsMember(onConn{dialRaw(t, srv.KafkaAddr())}, "long-canary", "long-in")
	if code, _, err := canary.heartbeat(ctx); err != nil || code != 0 {
		t.Fatalf("canary joins: code %d err %v", code, err)
	}
	m := newStreamsMember(onConn{dialRaw(t, srv.KafkaAddr())}, group, "long-in")
	m.id = member

	var wg sync.WaitGroup
	canaryErrs := make(chan string, 100)
	stop := make(chan struct{})
	wg.Add(1)
	go func() { // the other group's requests while the long ids are written
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if code, _, err := canary.heartbeat(ctx); err != nil || code != 0 {
				canaryErrs <- canary.id
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	waitFor(t, 20*time.Second, "the long-id member gets its tasks", func() error {
		if code, _, err := m.heartbeat(ctx); err != nil || code != 0 {
			t.Fatalf("long-id member heartbeat: code %d err %v (%v)", code, err, m.errs)
		}
		if len(m.partitions()) == 0 {
			return errors.New("no tasks yet")
		}
		return nil
	})
	close(stop)
	wg.Wait()
	if len(canaryErrs) > 0 {
		t.Fatalf("the other group failed beside the long ids: %v", canary.errs)
	}
	epoch := m.epoch
	g, err := describeStreams(ctx, m.cl, group)
	if err != nil || len(g.Members) != 1 || g.Members[0].MemberID != member {
		t.Fatalf("long-id group: %d members, %v", len(g.Members), err)
	}

	stopHost(t, srv)
	srv = startLoopHost(t, dir, "--store.partitions=1")
	m.cl = onConn{dialRaw(t, srv.KafkaAddr())}
	g, err = describeStreams(ctx, m.cl, group)
	if err != nil || len(g.Members) != 1 || g.Members[0].MemberID != member || g.Members[0].MemberEpoch != epoch {
		t.Fatalf("long-id group after the restart: %+v, %v", g.Members, err)
	}
	if code, _, err := m.heartbeat(ctx); err != nil || code != 0 {
		t.Fatalf("long-id member after the restart: code %d err %v (%v)", code, err, m.errs)
	}

	stopHost(t, srv)
	var rep strings.Builder
	if err := loop.RepairStore(filepath.Join(dir, host.StoreFile), 1, &rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rep.String(), "dropped 0 records") {
		t.Fatalf("repair of a healthy store with long ids:\n%s", rep.String())
	}
	srv = startLoopHost(t, dir, "--store.partitions=1")
	m.cl = onConn{dialRaw(t, srv.KafkaAddr())}
	if g, err = describeStreams(ctx, m.cl, group); err != nil || len(g.Members) != 1 || g.Members[0].MemberID != member {
		t.Fatalf("long-id group after a repair: %+v, %v", g.Members, err)
	}
}
