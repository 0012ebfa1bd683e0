package host_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestLoadStreamsGroups (COORDHOST_LOAD=1 only; a serial CI step): one
// streams group of 1000 raw KIP-1071 members plus 100 groups of 10, all in
// this process over loopback TCP, heartbeat through coordhost for 60 s.
// Every group must be Stable (all members at the group epoch, assignment
// epoch = group epoch) within 30 s, and no member may be fenced or get an
// error. It logs heartbeats/s and latency percentiles (docs/BENCHMARKS.md).
func TestLoadStreamsGroups(t *testing.T) {
	if os.Getenv("COORDHOST_LOAD") != "1" {
		t.Skip("set COORDHOST_LOAD=1 to run the 60 s load test")
	}
	const (
		bigMembers   = 1000
		smallGroups  = 100
		smallMembers = 10
		runFor       = 60 * time.Second
		stableWithin = 30 * time.Second
		clients      = 16
	)
	srv := startLoopHost(t, "", "--groups.defaults.streams.heartbeat.interval.ms=1000", "--groups.defaults.streams.assignment.interval.ms=200")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := newClient(t, srv.KafkaAddr())
	if err := createTopic(ctx, admin, "load-big", bigMembers); err != nil {
		t.Fatal(err)
	}
	if err := createTopic(ctx, admin, "load-small", smallMembers); err != nil {
		t.Fatal(err)
	}
	var reqs []kmsg.Requestor
	for i := 0; i < clients; i++ {
		reqs = append(reqs, &coordinator{cl: newClient(t, srv.KafkaAddr())})
	}
	type groupSpec struct{ name, topic string }
	groups := []groupSpec{{"load-big", "load-big"}}
	var members []*streamsMember
	for i := 0; i < bigMembers; i++ {
		members = append(members, newStreamsMember(reqs[len(members)%clients], "load-big", "load-big"))
	}
	for g := 0; g < smallGroups; g++ {
		name := fmt.Sprintf("load-small-%03d", g)
		groups = append(groups, groupSpec{name, "load-small"})
		for i := 0; i < smallMembers; i++ {
			members = append(members, newStreamsMember(reqs[len(members)%clients], name, "load-small"))
		}
	}

	var (
		stableAt  atomic.Int64 // unix nanos when every group was first seen Stable
		hbTotal   atomic.Int64
		hbSteady  atomic.Int64
		netErrs   atomic.Int64
		latMu     sync.Mutex
		latAll    []time.Duration
		latSteady []time.Duration
		wg        sync.WaitGroup
		start     = time.Now()
		stop      = start.Add(runFor)
	)
	for _, m := range members {
		wg.Add(1)
		go func(m *streamsMember) {
			defer wg.Done()
			var mine, mineSteady []time.Duration
			for time.Now().Before(stop) && ctx.Err() == nil {
				before := len(m.partitions())
				hctx, hcancel := context.WithTimeout(ctx, 10*time.Second)
				code, rtt, err := m.heartbeat(hctx)
				hcancel()
				if err != nil {
					netErrs.Add(1)
					time.Sleep(100 * time.Millisecond)
					continue
				}
				hbTotal.Add(1)
				mine = append(mine, rtt)
				if s := stableAt.Load(); s != 0 && time.Now().UnixNano() > s {
					hbSteady.Add(1)
					mineSteady = append(mineSteady, rtt)
				}
				if code != 0 {
					time.Sleep(time.Second)
					continue
				}
				m.mu.Lock()
				iv := m.interval
				m.mu.Unlock()
				if len(m.partitions()) != before {
					iv = 50 * time.Millisecond // acknowledge a new assignment promptly
				}
				time.Sleep(iv)
			}
			latMu.Lock()
			latAll = append(latAll, mine...)
			latSteady = append(latSteady, mineSteady...)
			latMu.Unlock()
		}(m)
	}

	describer := reqs[0]
	allStable := func() error {
		for _, g := range groups {
			d, err := describeStreams(ctx, describer, g.name)
			if err != nil {
				return fmt.Errorf("%s: %w", g.name, err)
			}
			want := smallMembers
			if g.name == "load-big" {
				want = bigMembers
			}
			if d.State != "Stable" || d.Epoch != d.AssignmentEpoch || len(d.Members) != want {
				return fmt.Errorf("%s: state %s epoch %d assignment %d members %d/%d", g.name, d.State, d.Epoch, d.AssignmentEpoch, len(d.Members), want)
			}
			for _, mm := range d.Members {
				if mm.MemberEpoch != d.Epoch {
					return fmt.Errorf("%s: member %s at epoch %d, group at %d", g.name, mm.MemberID, mm.MemberEpoch, d.Epoch)
				}
			}
		}
		return nil
	}
	var lastErr error
	for {
		if lastErr = allStable(); lastErr == nil {
			break
		}
		if time.Since(start) > stableWithin {
			cancel()
			wg.Wait()
			t.Fatalf("not all groups Stable within %v: %v", stableWithin, lastErr)
		}
		time.Sleep(250 * time.Millisecond)
	}
	stableTook := time.Since(start)
	stableAt.Store(time.Now().UnixNano())
	steadyStart := time.Now()
	wg.Wait()
	steadyFor := time.Since(steadyStart)
	if err := allStable(); err != nil {
		t.Errorf("after %v of heartbeats: %v", runFor, err)
	}
	fenced, errored := 0, 0
	for _, m := range members {
		_, errs, f := m.state()
		fenced += f
		if len(errs) > 0 {
			errored++
			if errored <= 5 {
				t.Errorf("member %s of %s: %v", m.id, m.group, errs)
			}
		}
	}
	if fenced > 0 || errored > 0 {
		t.Errorf("%d members errored, %d fencings", errored, fenced)
	}
	if n := netErrs.Load(); n > 0 {
		t.Errorf("%d heartbeats failed at the transport level", n)
	}
	pct := func(d []time.Duration, p float64) time.Duration {
		if len(d) == 0 {
			return 0
		}
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[int(float64(len(d)-1)*p)]
	}
	t.Logf("members %d in %d groups; all Stable after %v", len(members), len(groups), stableTook.Round(time.Millisecond))
	t.Logf("whole run %v: %d heartbeats, %.0f/s; latency p50 %v p99 %v max %v", runFor, hbTotal.Load(),
		float64(hbTotal.Load())/time.Since(start).Seconds(), pct(latAll, 0.50), pct(latAll, 0.99), pct(latAll, 1))
	t.Logf("steady state %v: %d heartbeats, %.0f/s; latency p50 %v p99 %v max %v", steadyFor.Round(time.Millisecond), hbSteady.Load(),
		float64(hbSteady.Load())/steadyFor.Seconds(), pct(latSteady, 0.50), pct(latSteady, 0.99), pct(latSteady, 1))
}
