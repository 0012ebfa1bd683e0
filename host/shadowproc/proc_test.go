package shadowproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/host/plugin"
	"github.com/coordhost/coordhost/host/plugin/plugintest"
)

// request is a small encoded assign request: 2 members, 4 tasks.
func request(t *testing.T) (*abi.AssignRequest, []byte) {
	t.Helper()
	req := &abi.AssignRequest{GroupID: "g", GroupEpoch: 1, Processes: []string{"p0", "p1"},
		Subtopologies: []abi.Subtopology{{ID: "0", Partitions: 4}},
		Members:       []abi.Member{{ID: "a", Process: 0}, {ID: "b", Process: 1}}}
	in, err := abi.AppendAssignRequest(nil, req)
	if err != nil {
		t.Fatal(err)
	}
	return req, in
}

// module is the C test plugin built with defines, and its version.
func module(t *testing.T, defines ...string) (path, version string) {
	t.Helper()
	src := "testdata/plugins/c/assignor.c"
	if len(defines) > 0 {
		src = "testdata/plugins/c/hostile.c"
	}
	path = plugintest.CPluginPath(t, src, defines...)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	version, err = Version(f)
	if err != nil {
		t.Fatal(err)
	}
	return path, version
}

func newProc(t *testing.T, deadline time.Duration) *Proc {
	t.Helper()
	if !Supported {
		t.Skip("the shadow process runs on Linux only")
	}
	p := New(Config{Plugin: plugin.Config{Deadline: deadline, MemoryLimitPages: 256}, Grace: 300 * time.Millisecond, MinBackoff: 10 * time.Millisecond})
	t.Cleanup(p.Close)
	return p
}

// assignOK runs the C assignor in p and checks its answer.
func assignOK(t *testing.T, p *Proc, path, version string) {
	t.Helper()
	req, in := request(t)
	out, took, err := p.Assign(context.Background(), "c", path, version, in, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var resp abi.AssignResponse
	if err := abi.DecodeAssignResponse(out, &resp); err != nil {
		t.Fatal(err)
	}
	if err := abi.ValidateAssignment(req, &resp); err != nil || took <= 0 {
		t.Fatalf("answer %+v after %v: %v", resp, took, err)
	}
}

// TestChildRunsPlugins: a module runs in a child process at nice 19 (on
// every thread) in its own process group; a module whose file no longer
// holds the version the parent loaded, a trap and the deadline are
// errors of the run, not crashes; Close leaves no process behind.
func TestChildRunsPlugins(t *testing.T) {
	p := newProc(t, 200*time.Millisecond)
	path, version := module(t)
	assignOK(t, p, path, version)
	pid := p.PID()
	if pid == 0 || pid == os.Getpid() {
		t.Fatalf("shadow process pid %d", pid)
	}
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		t.Errorf("shadow process group %d (%v), want its own", pgid, err)
	}
	if nices := threadNices(t, pid); len(nices) == 0 || strings.Trim(nices, "19 ") != "" {
		t.Errorf("shadow process threads' nice values %q, want 19 each", nices)
	}
	_, in := request(t)
	if _, _, err := p.Assign(context.Background(), "c", path, "wasm sha256:0000000000000000", in, time.Minute); err == nil || !strings.Contains(err.Error(), "reload the plugin") || errors.Is(err, ErrCrashed) {
		t.Errorf("a module file that changed since load: %v", err)
	}
	for _, v := range []string{"HOSTILE_TRAP_ASSIGN", "HOSTILE_LOOP"} {
		hp, hv := module(t, v)
		if _, _, err := p.Assign(context.Background(), v, hp, hv, in, time.Minute); err == nil || errors.Is(err, ErrCrashed) {
			t.Errorf("%s: %v, want a plugin error", v, err)
		}
	}
	if p.PID() != pid {
		t.Errorf("the shadow process was restarted (%d, then %d) after plugin errors", pid, p.PID())
	}
	p.Close()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("after Close the shadow process %d is still there: %v", pid, err)
	}
}

// threadNices is the nice value of each thread of pid.
func threadNices(t *testing.T, pid int) string {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		out = append(out, f[16]) // field 19 of stat: nice
	}
	return strings.Join(out, " ")
}

// TestCrashedChildIsRestarted: a child killed during a run (a module
// cannot crash it by design, so the test kills it) fails that run with
// ErrCrashed; the next run starts another child after the backoff.
func TestCrashedChildIsRestarted(t *testing.T) {
	p := newProc(t, 10*time.Second)
	path, version := module(t)
	assignOK(t, p, path, version)
	pid := p.PID()
	loop, loopVersion := module(t, "HOSTILE_LOOP")
	_, in := request(t)
	done := make(chan error, 1)
	go func() {
		_, _, err := p.Assign(context.Background(), "loop", loop, loopVersion, in, time.Minute)
		done <- err
	}()
	time.Sleep(300 * time.Millisecond) // the module loads and spins
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrCrashed) {
			t.Fatalf("run during which the child was killed: %v, want ErrCrashed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the run did not end when the child was killed")
	}
	assignOK(t, p, path, version)
	if p.PID() == pid || p.PID() == 0 {
		t.Fatalf("no new shadow process: %d, was %d", p.PID(), pid)
	}
}

// TestHungChildIsKilled: a child that stops answering (stopped with
// SIGSTOP) is killed once the run's deadline and the grace have passed.
func TestHungChildIsKilled(t *testing.T) {
	p := newProc(t, 100*time.Millisecond)
	path, version := module(t)
	assignOK(t, p, path, version)
	pid := p.PID()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	_, in := request(t)
	start := time.Now()
	_, _, err := p.Assign(context.Background(), "c", path, version, in, time.Minute)
	if !errors.Is(err, ErrCrashed) || !strings.Contains(err.Error(), "no answer within 400ms") {
		t.Fatalf("run in a stopped child: %v, want ErrCrashed after 400ms", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the stopped child was killed after %v", took)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the stopped child %d is still there: %v", pid, err)
	}
	assignOK(t, p, path, version)
}

// TestChildDiesWithItsParent: when coordhost dies without closing the
// Proc (killed with SIGKILL here; the pipe's end alone would not stop a
// child in the middle of a run), Pdeathsig kills the child too.
func TestChildDiesWithItsParent(t *testing.T) {
	if os.Getenv(envTestParent) != "" {
		parentProcess(t)
		return
	}
	if !Supported {
		t.Skip("the shadow process runs on Linux only")
	}
	path, version := module(t)
	loop, loopVersion := module(t, "HOSTILE_LOOP")
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildDiesWithItsParent$")
	cmd.Env = append(os.Environ(), envTestParent+"="+strings.Join([]string{path, version, loop, loopVersion}, "\n"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var pid int
	if _, err := fmt.Fscanf(out, "child %d\n", &pid); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Contains(string(b), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the shadow process %d outlived its parent: %s", pid, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// envTestParent makes the test binary the parent of
// TestChildDiesWithItsParent: it runs the C assignor (paths and versions
// in the variable) in a child, then the looping module with a deadline
// of a minute, and prints the child's pid once the module spins (the
// child, stuck in the call, would not notice its pipe's end for a
// minute).
const envTestParent = "SHADOWPROC_TEST_PARENT"

func parentProcess(t *testing.T) {
	f := strings.Split(os.Getenv(envTestParent), "\n")
	_ = os.Unsetenv(envTestParent)
	if len(f) != 4 {
		t.Fatalf("%s: %q", envTestParent, f)
	}
	p := New(Config{Plugin: plugin.Config{Deadline: time.Minute}})
	_, in := request(t)
	if _, _, err := p.Assign(context.Background(), "c", f[0], f[1], in, time.Minute); err != nil {
		t.Fatal(err)
	}
	go func() { _, _, _ = p.Assign(context.Background(), "loop", f[2], f[3], in, time.Minute) }()
	time.Sleep(500 * time.Millisecond) // the child loads the module and spins
	fmt.Printf("child %d\n", p.PID())
	time.Sleep(time.Minute)
}

// TestServeRejectsGarbage: the child stops on a frame that is not a
// valid message, on a first message that is not the limits, and on a
// frame longer than its limit.
func TestServeRejectsGarbage(t *testing.T) {
	framed := func(fs ...[]byte) []byte {
		var b bytes.Buffer
		for _, f := range fs {
			if err := writeFrame(&b, f, maxFrame); err != nil {
				t.Fatal(err)
			}
		}
		return b.Bytes()
	}
	for _, in := range [][]byte{
		{0, 0, 0, 2, 'z', 1},
		framed(appendLoad(nil, load{ID: 1, Name: "x"})),
		framed(appendLimits(nil, limits{}), []byte{0, 0, 0, 0, 'q'}),
		append(framed(appendLimits(nil, limits{})), 0xff, 0xff, 0xff, 0xff),
	} {
		var out bytes.Buffer
		if err := serve(context.Background(), bytes.NewReader(in), &out, nil); err == nil || errors.Is(err, io.EOF) {
			t.Errorf("%x served (%v): %x", in, err, out.Bytes())
		}
	}
}
