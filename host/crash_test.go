package host_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// coordhostBinary builds cmd/coordhost once per test binary.
func coordhostBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		// A prebuilt binary (another commit's, for a same-run comparison).
		if b := os.Getenv("TEST_COORDHOST_BINARY"); b != "" {
			binPath = b
			return
		}
		dir, err := os.MkdirTemp("", "coordhost-bin")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "coordhost")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/coordhost/coordhost/cmd/coordhost").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// proc is coordhost running as a child process.
type proc struct {
	cmd  *exec.Cmd
	addr string
	log  string
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// startProc runs coordhost serve on dataDir (with extra flags) and waits
// until its Kafka listener answers.
func startProc(t *testing.T, dataDir, port string, n int, extra ...string) *proc {
	t.Helper()
	logPath := filepath.Join(dataDir, fmt.Sprintf("stderr-%d.log", n))
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	args := append([]string{"--data.dir=" + dataDir, "--kafka.listen=127.0.0.1:" + port, "--admin.listen=127.0.0.1:0",
		"--plugins.dir=" + filepath.Join(dataDir, "no-plugins")}, append(append([]string{}, fastGroups...), extra...)...)
	cmd := exec.Command(coordhostBinary(t), args...)
	cmd.Stderr, cmd.Stdout = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, addr: "127.0.0.1:" + port, log: logPath}
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("coordhost run %d log:\n%s", n, b)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", p.addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return p
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logPath)
			t.Fatalf("coordhost did not listen on %s within 30s:\n%s", p.addr, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *proc) kill() {
	if p.cmd.Process != nil && p.cmd.ProcessState == nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		_ = p.cmd.Wait()
	}
}

// epochs is the durable view of a streams group that must survive a crash.
type epochs struct {
	group, assignment int32
	members           map[string]int32
}

func groupEpochs(ctx context.Context, cl kmsg.Requestor, group string) (epochs, error) {
	g, err := describeStreams(ctx, cl, group)
	if err != nil {
		return epochs{}, err
	}
	e := epochs{group: g.Epoch, assignment: g.AssignmentEpoch, members: map[string]int32{}}
	for _, m := range g.Members {
		e.members[m.MemberID] = m.MemberEpoch
	}
	return e, nil
}

func (e epochs) String() string {
	return fmt.Sprintf("group %d assignment %d members %v", e.group, e.assignment, e.members)
}

func (e epochs) equal(o epochs) bool {
	if e.group != o.group || e.assignment != o.assignment || len(e.members) != len(o.members) {
		return false
	}
	for k, v := range e.members {
		if o.members[k] != v {
			return false
		}
	}
	return true
}

// commitOffset commits offset for partition 0 of topic as member m and
// returns once coordhost acknowledged it.
func commitOffset(ctx context.Context, cl kmsg.Requestor, m *streamsMember, topic string, offset int64) error {
	epoch, _, _ := m.state()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.MemberID, req.Generation = m.group, m.id, epoch
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = topic
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset = 0, offset
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return err
			}
		}
	}
	return nil
}

func fetchOffset(ctx context.Context, cl kmsg.Requestor, group, topic string) (int64, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = group
	tt := kmsg.NewOffsetFetchRequestGroupTopic()
	tt.Topic, tt.Partitions = topic, []int32{0}
	g.Topics = append(g.Topics, tt)
	req.Groups = append(req.Groups, g)
	req.Group, req.Topics = group, []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: []int32{0}}}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	if len(resp.Groups) == 1 {
		if err := kerr.ErrorForCode(resp.Groups[0].ErrorCode); err != nil {
			return 0, err
		}
		for _, t := range resp.Groups[0].Topics {
			for _, p := range t.Partitions {
				return p.Offset, kerr.ErrorForCode(p.ErrorCode)
			}
		}
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			return p.Offset, kerr.ErrorForCode(p.ErrorCode)
		}
	}
	return 0, fmt.Errorf("no offset in %+v", resp)
}

// TestCrashRecovery runs coordhost as a child process and SIGKILLs it
// twice: (1) in Stable, after a completed rebalance and right after an
// acknowledged commit; (2) while a revocation is pending (a third member
// joined, one member was told to give up tasks and has not confirmed),
// again right after an acknowledged commit. After each restart on the same
// data directory the group's epochs equal the pre-crash ones, the members
// carry on with no UNKNOWN_MEMBER_ID or fencing error, OffsetFetch returns
// the acknowledged offset, and the group reaches Stable again. A raw classic
// member's heartbeat with its pre-crash member id and generation succeeds
// after each restart (no UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION).
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the coordhost binary")
	}
	dataDir, port := t.TempDir(), freePort(t)
	p := startProc(t, dataDir, port, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kc := newClient(t, p.addr)
	if err := createTopic(ctx, kc, "cr-in", 6); err != nil {
		t.Fatal(err)
	}
	cl := &coordinator{cl: kc}
	a, b := newStreamsMember(cl, "cr", "cr-in"), newStreamsMember(cl, "cr", "cr-in")
	beat := func(ms ...*streamsMember) error {
		for _, m := range ms {
			code, _, err := m.heartbeat(ctx)
			if err != nil {
				return err
			}
			if code != 0 {
				return fmt.Errorf("member %s: %v", m.id, kerr.ErrorForCode(code))
			}
		}
		return nil
	}
	stable := func(ms ...*streamsMember) func() error {
		return func() error {
			if err := beat(ms...); err != nil {
				return err
			}
			g, err := describeStreams(ctx, cl, "cr")
			if err != nil {
				return err
			}
			if g.State != "Stable" || g.Epoch != g.AssignmentEpoch || len(g.Members) != len(ms) {
				return fmt.Errorf("state %s epoch %d assignment %d members %d", g.State, g.Epoch, g.AssignmentEpoch, len(g.Members))
			}
			for _, m := range g.Members {
				if m.MemberEpoch != g.Epoch {
					return fmt.Errorf("member %s at epoch %d, group at %d", m.MemberID, m.MemberEpoch, g.Epoch)
				}
			}
			return nil
		}
	}
	waitFor(t, 30*time.Second, "a and b Stable", stable(a, b))
	cm := &classicMember{cl: cl, group: "crc"}
	if err := cm.join(ctx); err != nil {
		t.Fatalf("classic member join: %v", err)
	}
	checkClassic := func() {
		t.Helper()
		gen := cm.generation
		waitFor(t, 30*time.Second, "classic heartbeat after restart", func() error {
			err := cm.heartbeat(ctx)
			var ke *kerr.Error
			if errors.As(err, &ke) {
				t.Fatalf("classic member's heartbeat after restart: %v", err)
			}
			return err // transport errors: the child is still starting
		})
		dg := kmsg.NewPtrDescribeGroupsRequest()
		dg.Groups = []string{"crc"}
		resp, err := dg.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		g := resp.Groups[0]
		if g.State != "Stable" || len(g.Members) != 1 || g.Members[0].MemberID != cm.id || cm.generation != gen {
			t.Fatalf("classic group after restart: %+v (member %s generation %d)", g, cm.id, gen)
		}
	}

	crash := func(offset int64) (epochs, *proc) {
		t.Helper()
		if err := commitOffset(ctx, cl, a, "cr-in", offset); err != nil {
			t.Fatalf("commit %d: %v", offset, err)
		}
		pre, err := groupEpochs(ctx, cl, "cr")
		if err != nil {
			t.Fatal(err)
		}
		p.kill()
		np := startProc(t, dataDir, port, int(offset))
		return pre, np
	}
	check := func(pre epochs, offset int64) {
		t.Helper()
		var post epochs
		waitFor(t, 30*time.Second, "describe after restart", func() error {
			var err error
			post, err = groupEpochs(ctx, cl, "cr")
			return err
		})
		t.Logf("pre-crash %v; post-restart %v; state before crash recorded", pre, post)
		if !pre.equal(post) {
			t.Fatalf("epochs changed across the crash:\n pre  %v\n post %v", pre, post)
		}
		var got int64
		waitFor(t, 30*time.Second, "offset fetch after restart", func() error {
			var err error
			got, err = fetchOffset(ctx, cl, "cr", "cr-in")
			return err
		})
		if got != offset {
			t.Fatalf("OffsetFetch after restart = %d, want the acknowledged %d", got, offset)
		}
	}

	// Crash 1: Stable after a completed rebalance, just after a commit.
	pre, np := crash(42)
	p = np
	check(pre, 42)
	checkClassic()
	waitFor(t, 30*time.Second, "a and b Stable after restart 1", stable(a, b))

	// Crash 2: a revocation is pending.
	c := newStreamsMember(cl, "cr", "cr-in")
	if err := beat(c); err != nil {
		t.Fatal(err)
	}
	var revoking bool
	waitFor(t, 30*time.Second, "a is asked to revoke tasks", func() error {
		before := len(a.partitions())
		if err := beat(a); err != nil {
			return err
		}
		if len(a.partitions()) < before {
			revoking = true
			return nil
		}
		return fmt.Errorf("a still owns %v", a.partitions())
	})
	if !revoking {
		t.Fatal("no revocation")
	}
	g, err := describeStreams(ctx, cl, "cr")
	if err != nil {
		t.Fatal(err)
	}
	if g.State == "Stable" {
		t.Fatalf("group is Stable; expected a pending revocation (a has not confirmed)")
	}
	pre, np = crash(77)
	p = np
	check(pre, 77)
	checkClassic()
	waitFor(t, 30*time.Second, "a, b and c Stable after restart 2", stable(a, b, c))
	for _, m := range []*streamsMember{a, b, c} {
		if _, errs, fenced := m.state(); len(errs) > 0 || fenced > 0 {
			t.Errorf("member %s: errors %v (fenced %d)", m.id, errs, fenced)
		}
	}
	p.kill()
}

// classicMember is a raw classic-protocol member (JoinGroup/SyncGroup/
// Heartbeat), to check that its generation and member id survive a crash.
type classicMember struct {
	cl         kmsg.Requestor
	group, id  string
	generation int32
}

func (m *classicMember) join(ctx context.Context) error {
	for i := 0; i < 5; i++ {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType = m.group, m.id, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 30000
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}}}
		resp, err := req.RequestWith(ctx, m.cl)
		if err != nil {
			return err
		}
		m.id = resp.MemberID
		if resp.ErrorCode == kerr.MemberIDRequired.Code {
			continue
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return err
		}
		m.generation = resp.Generation
		sync := kmsg.NewPtrSyncGroupRequest()
		sync.Group, sync.MemberID, sync.Generation = m.group, m.id, m.generation
		sync.ProtocolType, sync.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
		sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: m.id, MemberAssignment: []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}}}
		sresp, err := sync.RequestWith(ctx, m.cl)
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(sresp.ErrorCode)
	}
	return fmt.Errorf("join did not complete")
}

func (m *classicMember) heartbeat(ctx context.Context) error {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation = m.group, m.id, m.generation
	resp, err := req.RequestWith(ctx, m.cl)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.ErrorCode)
}
