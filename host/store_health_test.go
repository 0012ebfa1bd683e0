package host_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host"
	"github.com/coordhost/coordhost/host/admin"
	"github.com/coordhost/coordhost/host/config"
	"github.com/coordhost/coordhost/host/loop"
	"github.com/coordhost/coordhost/host/runtime"
	"github.com/coordhost/coordhost/host/store"
	"github.com/coordhost/coordhost/internal/testtool"
)

// TestStoreFailureBackoffAndReadiness: while every append fails with a
// storage error (a full or read-only disk), requests are answered
// NOT_COORDINATOR, the loop is unready with the error, the
// coordhost_store_unhealthy gauge is 1, a member's expiry (due again at
// once after each rollback) is retried with backoff rather than in a hot
// loop, and the error log is rate-limited; once appends succeed again the
// next request is answered, readiness and the gauge recover.
func TestStoreFailureBackoffAndReadiness(t *testing.T) {
	cfg := core.DefaultConfig()
	cfg.Streams.InitialRebalanceDelayMs, cfg.Streams.AssignmentIntervalMs = 0, 0
	cfg.Streams.SessionTimeoutMs, cfg.Streams.HeartbeatIntervalMs = 100, 50
	c, err := core.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Step(time.Now().UnixMilli(), core.Topics{Topics: []core.TopicMetadata{{Name: "in", ID: [16]byte{1}, Partitions: 4}}})
	c.Commit()
	st, err := store.Open(filepath.Join(t.TempDir(), "coordhost.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var fault *runtime.FaultLog
	logs := &testtool.LogBuffer{}
	m := admin.NewMetrics()
	// the store's log with faults injected, opened as the loop would
	openLog := func(parts int) (runtime.Log, func() error, error) {
		if err := st.Partition(parts, loop.RecordGroup); err != nil {
			return nil, nil, err
		}
		sl, err := store.NewLog(st)
		if err != nil {
			return nil, nil, err
		}
		fault = runtime.NewFaultLog(sl)
		return fault, sl.Close, nil
	}
	l, err := loop.New(loop.Deps{Core: c, Metrics: m, OpenLog: openLog,
		Log: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = l.Shutdown(ctx)
	})
	f := &loopFixture{loop: l, core: c, store: st, logs: logs}
	gauge := func() string {
		var b strings.Builder
		m.WriteTo(&b)
		for _, line := range strings.Split(b.String(), "\n") {
			if strings.HasPrefix(line, "coordhost_store_unhealthy ") {
				return strings.TrimPrefix(line, "coordhost_store_unhealthy ")
			}
		}
		t.Fatalf("no coordhost_store_unhealthy gauge:\n%s", b.String())
		return ""
	}
	if r := f.heartbeat(t, "g", "m1", 0, nil); r.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.ErrorCode))
	}
	if err := l.Ready(); err != nil || gauge() != "0" {
		t.Fatalf("healthy store: ready %v, gauge %s", err, gauge())
	}

	fault.FailAppends(-1, -1, wrapStorage("no space left on device"))
	if r := f.heartbeat(t, "g", "m2", 0, nil); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("join with a failing store: %v, want NOT_COORDINATOR", kerr.ErrorForCode(r.ErrorCode))
	}
	if err := l.Ready(); err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("ready with a failing store: %v", err)
	}
	if g := gauge(); g != "1" {
		t.Fatalf("coordhost_store_unhealthy = %s while appends fail", g)
	}
	// m1's session (100 ms) expires: the expiry is rolled back and due
	// again at once; without backoff it would be retried thousands of
	// times a second.
	time.Sleep(300 * time.Millisecond)
	before := fault.Appends(0)
	time.Sleep(1500 * time.Millisecond)
	if n := fault.Appends(0) - before; n < 1 || n > 8 {
		t.Fatalf("%d appends in 1.5 s with a failing store, want a few retries with backoff", n)
	}
	if n := strings.Count(logs.String(), "store append failed"); n > 4 {
		t.Fatalf("%d error lines in ~2 s, want at most one a second:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "failures_not_logged=") {
		t.Fatalf("the rate-limited line does not count what it left out:\n%s", logs.String())
	}

	fault.Clear()
	if r := f.heartbeat(t, "g", "m2", 0, nil); r.ErrorCode != 0 {
		t.Fatalf("join once the store takes appends again: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if err := l.Ready(); err != nil || gauge() != "0" {
		t.Fatalf("after a successful append: ready %v, gauge %s", err, gauge())
	}
	if !strings.Contains(logs.String(), "store appends succeed again") {
		t.Fatalf("no log line for the recovery:\n%s", logs.String())
	}

	// A record the log can never hold is answered as Kafka answers a
	// record too large for its log, and is no storage failure.
	// The failure is aimed at g2's records alone: g's members expire
	// meanwhile (100 ms sessions) on the same partition, and their
	// appends must not take it.
	fault.FailOwnerAppends("g2", 1, errors.Join(errors.New("key of 70000 bytes"), runtime.ErrInvalidRecord))
	if r := f.heartbeat(t, "g2", "m3", 0, nil); r.ErrorCode != kerr.UnknownServerError.Code {
		t.Fatalf("join whose record is invalid: %v, want UNKNOWN_SERVER_ERROR", kerr.ErrorForCode(r.ErrorCode))
	}
	if err := l.Ready(); err != nil || gauge() != "0" {
		t.Fatalf("after an invalid record: ready %v, gauge %s", err, gauge())
	}
}

func wrapStorage(msg string) error { return errors.Join(errors.New(msg), runtime.ErrStorage) }

// TestStorePartitionsKey: store.partitions sets the partition count of a
// new store; an existing store started with another count is refused
// with both counts named, and starts again with its own.
func TestStorePartitionsKey(t *testing.T) {
	dir := t.TempDir()
	srv := startLoopHost(t, dir, "--store.partitions=3", "--runtime.workers=1")
	if n := srv.Store().Partitions(); n != 3 {
		t.Fatalf("store created with %d partitions, want 3", n)
	}
	stopHost(t, srv)
	cfg, err := config.Load([]string{"--data.dir=" + dir, "--kafka.listen=127.0.0.1:0", "--admin.listen=127.0.0.1:0",
		"--plugins.dir=" + t.TempDir(), "--store.partitions=5"}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if s, err := host.Start(ctx, host.Options{Config: cfg, Coordinator: host.NewCoordinator}); err == nil {
		s.Shutdown(ctx)
		t.Fatal("a 3-partition store started with store.partitions=5")
	} else if !strings.Contains(err.Error(), "created with 3 partitions and cannot be opened with 5") {
		t.Fatalf("refusal: %v", err)
	}
	startLoopHost(t, dir, "--store.partitions=3")
}
