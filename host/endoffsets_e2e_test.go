package host_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host"
	"github.com/coordhost/coordhost/host/authz"
	"github.com/coordhost/coordhost/host/config"
	"github.com/coordhost/coordhost/host/loop"
)

// TestChangelogEndOffsetsFromDataPlane: members that report
// offsets but no end offsets (as classic members' offset sums) leave the
// end offsets unknown, and an unknown end offset never counts as caught
// up. The host fetches the changelog end offsets from the data plane
// (embedded, and an external cluster): 5 records in each partition of
// app-store-changelog become end offset 5 of each task in core, so b's warm-ups at offset 5 are caught up
// (acceptable lag 0) and a probe moves two actives to b. In a group whose
// streams.end.offsets.refresh.ms is 0 nothing is fetched: its end offsets
// stay unknown and b's warm-ups never take over.
func TestChangelogEndOffsetsFromDataPlane(t *testing.T) {
	t.Run("embedded", func(t *testing.T) { testChangelogEndOffsets(t) })
	t.Run("external", func(t *testing.T) {
		testChangelogEndOffsets(t, "--dataplane.mode=external", newObservedCluster(t, kfake.NumBrokers(3)).bootstrap())
	})
}

func testChangelogEndOffsets(t *testing.T, extra ...string) {
	dir := t.TempDir()
	yaml := filepath.Join(dir, "coordhost.yaml")
	if err := os.WriteFile(yaml, []byte("groups:\n  overrides:\n    - match: \"nofetch-*\"\n      streams.end.offsets.refresh.ms: 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, lp := startWithLoop(t, dir, append([]string{"--config=" + yaml, "--groups.defaults.streams.end.offsets.refresh.ms=200"}, extra...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := newClient(t, srv.KafkaAddr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for _, tp := range []string{"in", probeChangelog} {
		if err := createTopic(ctx, cl, tp, 4); err != nil {
			t.Fatal(err)
		}
	}
	for p := int32(0); p < 4; p++ {
		for i := 0; i < 5; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: probeChangelog, Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	f := &probeFixture{loop: lp}
	fiveEach := map[int32]int64{0: 5, 1: 5, 2: 5, 3: 5}
	scaleOut := func(group string) []*lagMember {
		a := &lagMember{f: f, group: group, id: "a", offsets: fiveEach} // offsets, no end offsets
		b := &lagMember{f: f, group: group, id: "b"}
		pump(t, group+": a owns all", []*lagMember{a}, wantTargets(f, t, group, map[string][3]int{"a": {4, 0, 0}}))
		pump(t, group+": b warms up", []*lagMember{a, b}, func() error {
			if countTasks(b.warmup) != 2 {
				return fmt.Errorf("b owns warm-ups %v", b.warmup)
			}
			return nil
		})
		b.mu.Lock()
		b.offsets = map[int32]int64{}
		for _, w := range b.warmup {
			for _, p := range w.Partitions {
				b.offsets[p] = 5 // at the changelog's end: caught up once the end is known
			}
		}
		b.mu.Unlock()
		return []*lagMember{a, b}
	}
	ends := func(group string) map[core.TaskID]int64 {
		m, err := lp.KnownEndOffsets(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}

	ms := scaleOut("fetch-g")
	pump(t, "end offsets fetched", ms, func() error {
		got := ends("fetch-g")
		for p := int32(0); p < 4; p++ {
			if got[core.TaskID{Subtopology: "0", Partition: p}] != 5 {
				return fmt.Errorf("known end offsets %v, want 5 for each of 0_0..0_3", got)
			}
		}
		return nil
	})
	pump(t, "caught-up warm-ups take over", ms, wantTargets(f, t, "fetch-g", map[string][3]int{"a": {2, 0, 0}, "b": {2, 0, 0}}))
	// streams.probing.policy is empty: the ha assignor's own probe export
	// decided (probe checks ran, none failed).
	if checks, failures := probeMetrics(t, srv.AdminAddr()); checks < 1 || failures != 0 {
		t.Fatalf("probe checks %v, failures %v: want the ha module's policy consulted without failure", checks, failures)
	}

	ms = scaleOut("nofetch-g")
	epoch, _ := f.describe(t, "nofetch-g")
	deadline := time.Now().Add(2 * time.Second) // ten refresh periods of the other group
	for time.Now().Before(deadline) {
		for _, m := range ms {
			m.heartbeat(t)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := ends("nofetch-g"); len(got) != 0 {
		t.Fatalf("refresh disabled, yet end offsets %v are known", got)
	}
	if e, targets := f.describe(t, "nofetch-g"); e != epoch || targets["a"] != [3]int{4, 0, 0} || targets["b"] != [3]int{0, 0, 2} {
		t.Fatalf("unknown end offsets: epoch %d (was %d), targets %v; want unchanged 4/0/0 and 0/0/2", e, epoch, targets)
	}
}

// startWithLoop starts coordhost on dir with the HA assignor, acceptable
// lag 0 and 4-partition auto-created topics (plus args), and returns its
// event lp.
func startWithLoop(t *testing.T, dir string, args ...string) (*host.Server, *loop.Loop) {
	t.Helper()
	base := append([]string{"--data.dir=" + dir, "--kafka.listen=127.0.0.1:0", "--admin.listen=127.0.0.1:0",
		"--plugins.dir=" + t.TempDir(), "--dataplane.partitions=4",
		"--groups.defaults.streams.assignor.name=ha", "--groups.defaults.streams.acceptable.recovery.lag=0"}, fastGroups...)
	cfg, err := config.Load(append(base, args...), nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var lp *loop.Loop
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := host.Start(ctx, host.Options{Config: cfg, Log: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Coordinator: func(s *host.Server) (host.Wiring, error) {
			w, err := host.NewCoordinator(s)
			if a, ok := w.Coordinator.(*authz.Coordinator); ok { // external: the cluster authorizes
				lp = a.Inner().(*loop.Loop)
			} else if err == nil {
				lp = w.Coordinator.(*loop.Loop)
			}
			return w, err
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopHost(t, srv) }) // a second Shutdown is a no-op
	return srv, lp
}

// TestEndOffsetsFetchedOnLoad: after a restart, core's soft state (every
// reported or fetched end offset) is gone; the host fetches the changelog
// end offsets of the replayed group before its loop starts. The second run
// refreshes only every hour, and a fetch on load counts as the group's
// last fetch, so only the fetch on load can have supplied them.
func TestEndOffsetsFetchedOnLoad(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv, lp := startWithLoop(t, dir, "--groups.defaults.streams.end.offsets.refresh.ms=200")
	cl := newClient(t, srv.KafkaAddr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for _, tp := range []string{"in", probeChangelog} {
		if err := createTopic(ctx, cl, tp, 4); err != nil {
			t.Fatal(err)
		}
	}
	for p := int32(0); p < 4; p++ {
		for i := 0; i <= int(p); i++ { // end offsets 1, 2, 3, 4
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: probeChangelog, Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	f := &probeFixture{loop: lp}
	a := &lagMember{f: f, group: "reload-g", id: "a", offsets: map[int32]int64{0: 1}}
	pump(t, "a owns all", []*lagMember{a}, wantTargets(f, t, "reload-g", map[string][3]int{"a": {4, 0, 0}}))
	cl.Close()
	stopHost(t, srv)

	_, lp = startWithLoop(t, dir, "--groups.defaults.streams.end.offsets.refresh.ms=3600000")
	got, err := lp.KnownEndOffsets(ctx, "reload-g")
	if err != nil {
		t.Fatal(err)
	}
	want := map[core.TaskID]int64{{Subtopology: "0", Partition: 0}: 1, {Subtopology: "0", Partition: 1}: 2,
		{Subtopology: "0", Partition: 2}: 3, {Subtopology: "0", Partition: 3}: 4}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("end offsets after the restart: %v, want %v (fetched on load)", got, want)
	}
}

// probeMetrics reads the probe-check counters from the admin /metrics.
func probeMetrics(t *testing.T, admin string) (checks, failures float64) {
	t.Helper()
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || strings.HasPrefix(line, "#") {
			continue
		}
		var v float64
		if _, err := fmt.Sscanf(f[1], "%g", &v); err != nil {
			continue
		}
		switch {
		case f[0] == "coordhost_probe_checks_total":
			checks = v
		case f[0] == "coordhost_probe_failures_total":
			failures = v
		}
	}
	return checks, failures
}

// TestProbingPolicyRuntimeConfig: streams.probing.policy is a group config
// like any other: set to "builtin" at run time (IncrementalAlterConfigs),
// the group's warm-ups are promoted by core's built-in rule and no probing
// policy is consulted; deleting the value returns the group to its
// assignor's own policy (ha), which is consulted again.
func TestProbingPolicyRuntimeConfig(t *testing.T) {
	srv, lp := startWithLoop(t, t.TempDir(), "--groups.defaults.streams.acceptable.recovery.lag=10")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := newClient(t, srv.KafkaAddr())
	for _, tp := range []string{"in", probeChangelog} {
		if err := createTopic(ctx, cl, tp, 4); err != nil {
			t.Fatal(err)
		}
	}
	mustAlter(t, ctx, cl, "rt-g", setOp("streams.probing.policy", "builtin"))
	f := &probeFixture{loop: lp}
	ms, _ := haScaleOut(t, f, "rt-g")
	pump(t, "built-in early probe moves actives", ms, wantTargets(f, t, "rt-g", map[string][3]int{"a": {2, 0, 0}, "b": {2, 0, 0}}))
	if checks, _ := probeMetrics(t, srv.AdminAddr()); checks != 0 {
		t.Fatalf("%v probe checks with streams.probing.policy=builtin, want 0", checks)
	}

	del := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	del.Name, del.Op = "streams.probing.policy", kmsg.IncrementalAlterConfigOpDelete
	mustAlter(t, ctx, cl, "rt-g", del)
	b := &lagMember{f: f, group: "rt-g", id: "c"} // a change of membership: a new target, a policy check
	pump(t, "the ha policy is consulted", append(ms, b), func() error {
		if checks, _ := probeMetrics(t, srv.AdminAddr()); checks < 1 {
			return fmt.Errorf("%v probe checks", checks)
		}
		return nil
	})
}
