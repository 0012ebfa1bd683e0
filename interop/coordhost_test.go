package interop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// coordhostFlags are the suite's coordhost settings beyond ports and
// directories: the same 10 s session timeout, heartbeat interval and
// start-up delays as the baseline broker (broker_test.go), one standby like
// the instances. Two deliberate differences are on (docs/RATIONALE.md): a
// streams member waiting for tasks other members still hold is told to
// heartbeat every unreleasedHeartbeatIntervalMs, and every streams member
// of a group in a roll (a member left or was fenced within a session
// timeout, or a member is not reconciled) every
// rebalanceHeartbeatIntervalMs; the broker tells them heartbeatIntervalMs.
var coordhostFlags = []string{
	fmt.Sprintf("--groups.defaults.streams.session.timeout.ms=%d", sessionTimeoutMs),
	fmt.Sprintf("--groups.defaults.streams.heartbeat.interval.ms=%d", heartbeatIntervalMs),
	fmt.Sprintf("--groups.defaults.streams.unreleased.heartbeat.interval.ms=%d", unreleasedHeartbeatIntervalMs),
	fmt.Sprintf("--groups.defaults.streams.rebalance.heartbeat.interval.ms=%d", rebalanceHeartbeatIntervalMs),
	fmt.Sprintf("--groups.defaults.consumer.session.timeout.ms=%d", sessionTimeoutMs),
	fmt.Sprintf("--groups.defaults.consumer.heartbeat.interval.ms=%d", heartbeatIntervalMs),
	"--groups.defaults.streams.initial.rebalance.delay.ms=0",
	"--groups.defaults.streams.num.standby.replicas=1",
	"--groups.defaults.group.initial.rebalance.delay.ms=0",
	"--groups.defaults.group.min.session.timeout.ms=1000",
	"--dataplane.partitions=" + fmt.Sprint(inputPartitions),
	"--shutdown.timeout=5s",
	// member-level group events (each member's assignment) for failure reports
	"--log.level=debug",
}

// unreleasedHeartbeatIntervalMs is coordhost's
// streams.unreleased.heartbeat.interval.ms in the suite.
const unreleasedHeartbeatIntervalMs = 50

// rebalanceHeartbeatIntervalMs is coordhost's
// streams.rebalance.heartbeat.interval.ms in the suite.
const rebalanceHeartbeatIntervalMs = 50

var coordhostBuild struct {
	once sync.Once
	bin  string
	err  error
}

// coordhostBinary builds ./cmd/coordhost once per test binary.
func coordhostBinary(t *testing.T) string {
	t.Helper()
	coordhostBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "interop-coordhost-")
		if err != nil {
			coordhostBuild.err = err
			return
		}
		bin := filepath.Join(dir, "coordhost")
		goTool, err := exec.LookPath("go")
		if err != nil {
			coordhostBuild.err = err
			return
		}
		out, err := exec.Command(goTool, "build", "-o", bin, "../cmd/coordhost").CombinedOutput()
		if err != nil {
			coordhostBuild.err = fmt.Errorf("go build ./cmd/coordhost: %v\n%s", err, out)
			return
		}
		coordhostBuild.bin = bin
	})
	if coordhostBuild.err != nil {
		t.Fatal(coordhostBuild.err)
	}
	return coordhostBuild.bin
}

// coordhost is a running coordhost server.
type coordhost struct {
	addr   string
	proc   *proc
	t      *testing.T
	logDir string
	args   []string // the serve command line, reused by restart
}

// startCoordhost starts coordhost on loopback: with an embedded data plane
// when dataplane is empty, else in front of the Kafka cluster at dataplane.
// It waits (bounded) until the listener answers Metadata, or, with extra
// flags (a SASL cluster refuses an unauthenticated Metadata), until it logs
// that it is serving.
func startCoordhost(t *testing.T, logDir, dataplane string, extra ...string) *coordhost {
	t.Helper()
	c := &coordhost{addr: fmt.Sprintf("127.0.0.1:%d", freePort(t)), t: t, logDir: logDir}
	args := append([]string{"serve",
		"--kafka.listen=" + c.addr,
		fmt.Sprintf("--admin.listen=127.0.0.1:%d", freePort(t)),
		"--data.dir=" + filepath.Join(t.TempDir(), "coordhost-data"),
	}, coordhostFlags...)
	if dataplane != "" {
		args = append(args, "--dataplane.mode=external", "--dataplane.bootstrap="+dataplane)
	}
	c.args = append(args, extra...)
	c.proc = startProc(t, "coordhost", logDir, coordhostBinary(t), c.args...)
	if len(extra) > 0 {
		if _, _, err := c.proc.waitLine("coordhost is serving", 0, time.Minute); err != nil {
			t.Fatalf("coordhost: %v\n%s", err, c.proc.tail(60))
		}
		return c
	}
	if err := waitMetadata(c.addr, time.Minute, c.proc); err != nil {
		t.Fatalf("coordhost: %v\n%s", err, c.proc.tail(60))
	}
	return c
}

// restart ends coordhost — SIGTERM and a bounded wait for its drain when
// graceful, else SIGKILL — and starts it again at once on the same address
// and data directory. It returns the downtime: from the signal until the
// new process answers Metadata. old is the stopped process, for reports.
func (c *coordhost) restart(graceful bool) (downtime time.Duration, old *proc, err error) {
	old = c.proc
	start := time.Now()
	if graceful {
		err = old.stop(30 * time.Second)
	} else {
		old.kill()
	}
	if err != nil {
		return 0, old, err
	}
	c.proc = startProc(c.t, "coordhost", c.logDir, coordhostBinary(c.t), c.args...)
	if err := waitMetadata(c.addr, time.Minute, c.proc); err != nil {
		return 0, old, fmt.Errorf("restarted coordhost: %v", err)
	}
	return time.Since(start), old, nil
}

// groupsServed asks addr for the coordinator of group, retrying
// COORDINATOR_NOT_AVAILABLE for up to d: nil once it names one.
func groupsServed(addr, group string, d time.Duration) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	deadline := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey = group
		req.CoordinatorKeys = []string{group}
		resp, err := req.RequestWith(ctx, cl)
		cancel()
		if err != nil {
			return fmt.Errorf("FindCoordinator: %w", err)
		}
		code := resp.ErrorCode
		if len(resp.Coordinators) > 0 {
			code = resp.Coordinators[0].ErrorCode
		}
		switch e := kerr.ErrorForCode(code); {
		case e == nil:
			return nil
		case !errors.Is(e, kerr.CoordinatorNotAvailable) || !time.Now().Before(deadline):
			return fmt.Errorf("FindCoordinator(%s): %w", group, e)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// coordhostFor returns the bootstrap of the coordhost the online scenarios
// use: $COORDHOST_INTEROP_BOOTSTRAP if set, else a coordhost started here
// (embedded data plane when dataplane is empty) once it coordinates groups.
func coordhostFor(t *testing.T, dir, dataplane string) (string, []*proc) {
	t.Helper()
	if b := os.Getenv(bootstrapEnv); b != "" && dataplane == "" {
		return b, nil
	}
	c := startCoordhost(t, dir, dataplane)
	if err := groupsServed(c.addr, "interop-probe", 30*time.Second); err != nil {
		t.Fatalf("coordhost: %v\n%s", err, c.proc.tail(60))
	}
	return c.addr, []*proc{c.proc}
}
