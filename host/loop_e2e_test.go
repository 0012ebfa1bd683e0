package host_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/coordhost/coordhost/host"
	"github.com/coordhost/coordhost/host/config"
)

// fastGroups are group settings that make rebalances quick in tests.
var fastGroups = []string{
	"--groups.defaults.streams.initial.rebalance.delay.ms=0",
	"--groups.defaults.streams.heartbeat.interval.ms=300",
	"--groups.defaults.streams.assignment.interval.ms=0",
	"--groups.defaults.group.initial.rebalance.delay.ms=0",
}

// startLoopHost starts coordhost with the event loop wired (as `coordhost
// serve` does) on loopback ephemeral ports.
func startLoopHost(t *testing.T, dataDir string, args ...string) *host.Server {
	t.Helper()
	return startHostWith(t, dataDir, host.NewCoordinator, args...)
}

// startHostWith is startLoopHost with the coordinator factory wire.
func startHostWith(t *testing.T, dataDir string, wire func(*host.Server) (host.Wiring, error), args ...string) *host.Server {
	t.Helper()
	if dataDir == "" {
		dataDir = t.TempDir()
	}
	base := []string{"--data.dir=" + dataDir, "--kafka.listen=127.0.0.1:0", "--admin.listen=127.0.0.1:0", "--plugins.dir=" + t.TempDir()}
	cfg, err := config.Load(append(append(base, fastGroups...), args...), nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := host.Start(ctx, host.Options{Config: cfg, Coordinator: wire,
		Log: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopHost(t, srv) })
	return srv
}

func newClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestTimeoutOverhead(5 * time.Second), kgo.MaxVersions(clientVersions())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// clientVersions are kgo's latest versions plus the KIP-1071 streams
// APIs, which kversion does not list yet.
func clientVersions() *kversion.Versions {
	v := kversion.Tip()
	v.SetMaxKeyVersion(88, 1) // StreamsGroupHeartbeat
	v.SetMaxKeyVersion(89, 1) // StreamsGroupDescribe
	return v
}

// waitFor polls cond every 50ms until it returns nil or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %v: %v", what, d, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestStreamsGroupOverTCP: three raw KIP-1071 members join a streams group
// through coordhost's Kafka listener; the group reaches Stable with all six
// tasks of the 6-partition source topic assigned exactly once; a member
// leaves and the remaining two take over its tasks.
func TestStreamsGroupOverTCP(t *testing.T) {
	srv := startLoopHost(t, "")
	ctx := timeout(t)
	kc := newClient(t, srv.KafkaAddr())
	if err := createTopic(ctx, kc, "st-in", 6); err != nil {
		t.Fatal(err)
	}
	cl := &coordinator{cl: kc}
	members := []*streamsMember{newStreamsMember(cl, "st", "st-in"), newStreamsMember(cl, "st", "st-in"), newStreamsMember(cl, "st", "st-in")}
	heartbeatAll := func(ms []*streamsMember) error {
		for _, m := range ms {
			if code, _, err := m.heartbeat(ctx); err != nil || code != 0 {
				return fmt.Errorf("member %s: code %d err %v", m.id, code, err)
			}
		}
		return nil
	}
	stableWith := func(ms []*streamsMember) func() error {
		return func() error {
			if err := heartbeatAll(ms); err != nil {
				return err
			}
			g, err := describeStreams(ctx, cl, "st")
			if err != nil {
				return err
			}
			if g.State != "Stable" || g.AssignmentEpoch != g.Epoch {
				return fmt.Errorf("state %s, group epoch %d, assignment epoch %d", g.State, g.Epoch, g.AssignmentEpoch)
			}
			seen := map[int32]int{}
			for _, m := range ms {
				for _, p := range m.partitions() {
					seen[p]++
				}
			}
			if len(seen) != 6 {
				return fmt.Errorf("members own %v, want partitions 0-5", seen)
			}
			for p, n := range seen {
				if n != 1 {
					return fmt.Errorf("partition %d owned %d times", p, n)
				}
			}
			return nil
		}
	}
	waitFor(t, 20*time.Second, "three members Stable with 6 tasks", stableWith(members))
	for _, m := range members {
		if n := len(m.partitions()); n != 2 {
			t.Errorf("member %s owns %d tasks, want 2 (balanced)", m.id, n)
		}
	}
	if err := members[2].leave(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "two members Stable with 6 tasks", stableWith(members[:2]))
	g, err := describeStreams(ctx, cl, "st")
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Members) != 2 {
		t.Fatalf("describe shows %d members after a leave, want 2", len(g.Members))
	}
	for _, m := range members[:2] {
		if _, errs, _ := m.state(); len(errs) > 0 {
			t.Errorf("member %s saw errors: %v", m.id, errs)
		}
	}
}

// TestInternalTopicsCreated: a streams topology with a state changelog
// makes core ask for the internal topic; the loop creates it in the data
// plane, the topic refresh hands it back to core, and the member gets its
// tasks.
func TestInternalTopicsCreated(t *testing.T) {
	srv := startLoopHost(t, "")
	ctx := timeout(t)
	kc := newClient(t, srv.KafkaAddr())
	if err := createTopic(ctx, kc, "it-in", 3); err != nil {
		t.Fatal(err)
	}
	cl := &coordinator{cl: kc}
	const changelog = "it-app-store-changelog"
	var active int
	waitFor(t, 20*time.Second, "member owns 3 tasks once the changelog exists", func() error {
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Group, req.MemberID, req.RebalanceTimeoutMillis = "it-app", "m1", 30000
		proc := "p1"
		req.ProcessID = &proc
		req.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
			{SubtopologyID: "0", SourceTopics: []string{"it-in"}, StateChangelogTopics: []kmsg.TopicInfo{{Topic: changelog}}}}}
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		if resp.ErrorCode != 0 {
			return kerr.ErrorForCode(resp.ErrorCode)
		}
		active = 0
		for _, tk := range resp.ActiveTasks {
			active += len(tk.Partitions)
		}
		// leave again so the next round joins afresh with epoch 0
		lv := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		lv.Group, lv.MemberID, lv.MemberEpoch = "it-app", "m1", -1
		if _, err := lv.RequestWith(ctx, cl); err != nil {
			return err
		}
		if active != 3 {
			return fmt.Errorf("member got %d tasks", active)
		}
		return nil
	})
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(changelog)}}
	md.AllowAutoTopicCreation = false
	mr, err := md.RequestWith(ctx, kc)
	if err != nil {
		t.Fatal(err)
	}
	if len(mr.Topics) != 1 || mr.Topics[0].ErrorCode != 0 || len(mr.Topics[0].Partitions) != 3 {
		t.Fatalf("changelog topic in the data plane: %+v", mr.Topics)
	}
}
