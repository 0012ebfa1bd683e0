package interop

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// jvmFlags keep every JVM of the suite small: the suite shares two cores
// with other work, and its runs are short, so C1 only and a serial GC.
var jvmFlags = []string{"-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"}

// proc is one JVM started by the driver. Its stdout and stderr go to a log
// file (kept for failure reports) and, line by line, to waiters.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	in   io.WriteCloser

	mu    sync.Mutex
	lines []string
	cond  *sync.Cond
	done  chan struct{}
	err   error
}

// startJava runs mainClass from the streams-app classpath with args; the
// process is killed at the end of the test if still running.
func startJava(t *testing.T, name, logDir, mainClass string, args ...string) *proc {
	t.Helper()
	return startJavaFrom(t, appDir, name, logDir, mainClass, args...)
}

// startJavaFrom is startJava with the classpath of the Maven project in dir.
func startJavaFrom(t *testing.T, dir, name, logDir, mainClass string, args ...string) *proc {
	t.Helper()
	java := javaPath(t)
	cp := classpath(t, dir)
	full := append(append(append([]string{}, jvmFlags...), "-cp", cp, mainClass), args...)
	return startProc(t, name, logDir, java, full...)
}

// createLog creates logDir/name.log, or name-2.log, name-3.log, … when
// another process of this run already wrote under that name (scenarios
// reuse instance names), so no log is ever overwritten.
func createLog(logDir, name string) (*os.File, error) {
	for i := 1; ; i++ {
		path := filepath.Join(logDir, name+".log")
		if i > 1 {
			path = filepath.Join(logDir, fmt.Sprintf("%s-%d.log", name, i))
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
}

// procCPUs, when set, is the CPU list (taskset -c) startProc pins the
// processes it starts to, every thread of them included: the benchmarks
// set it around a start (pinnedTo) and leave it empty otherwise.
var procCPUs string

// pinnedTo runs start with the processes it starts pinned to cpus (a
// taskset list; "" pins nothing).
func pinnedTo[T any](cpus string, start func() T) T {
	saved := procCPUs
	procCPUs = cpus
	defer func() { procCPUs = saved }()
	return start()
}

// startProc runs the executable path with args as process name, logging to
// logDir/name.log (see createLog); it is killed at the end of the test if still running.
func startProc(t *testing.T, name, logDir, path string, args ...string) *proc {
	t.Helper()
	if procCPUs != "" { // taskset execs the command: the pid stays the process's
		path, args = "taskset", append([]string{"-c", procCPUs, path}, args...)
	}
	p := &proc{name: name, cmd: exec.Command(path, args...), done: make(chan struct{})}
	p.cmd.Env = childEnv()
	p.cond = sync.NewCond(&p.mu)
	f, err := createLog(logDir, name)
	if err != nil {
		t.Fatal(err)
	}
	p.log = f.Name()
	pr, pw := io.Pipe()
	p.cmd.Stdout, p.cmd.Stderr = pw, pw
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	readDone := make(chan struct{})
	go func() { p.read(pr, f); close(readDone) }()
	go func() {
		err := p.cmd.Wait()
		pw.Close()
		<-readDone
		p.mu.Lock()
		p.err = err
		close(p.done)
		p.cond.Broadcast()
		p.mu.Unlock()
	}()
	t.Cleanup(func() { p.kill() })
	return p
}

// childEnv is this process's environment without the suite's own
// COORDHOST_INTEROP* variables: coordhost reads every COORDHOST_* variable
// as configuration and refuses unknown keys.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "COORDHOST_INTEROP") {
			env = append(env, kv)
		}
	}
	return env
}

func (p *proc) read(r io.Reader, f *os.File) {
	defer f.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(f, line)
		p.mu.Lock()
		p.lines = append(p.lines, line)
		p.cond.Broadcast()
		p.mu.Unlock()
	}
}

// waitLine waits up to d for an output line containing substr (counting
// from line index from) and returns it with the index after it.
func (p *proc) waitLine(substr string, from int, d time.Duration) (string, int, error) {
	deadline := time.Now().Add(d)
	timer := time.AfterFunc(d, func() { p.mu.Lock(); p.cond.Broadcast(); p.mu.Unlock() })
	defer timer.Stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := from; ; {
		for ; i < len(p.lines); i++ {
			if strings.Contains(p.lines[i], substr) {
				return p.lines[i], i + 1, nil
			}
		}
		if p.exited() {
			return "", i, fmt.Errorf("%s exited (%v) before printing %q", p.name, p.err, substr)
		}
		if !time.Now().Before(deadline) {
			return "", i, fmt.Errorf("%s printed no %q within %v", p.name, substr, d)
		}
		p.cond.Wait()
	}
}

// lineCount is the number of output lines so far.
func (p *proc) lineCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.lines)
}

// grep returns the output lines that contain any of substrs (case-insensitive).
// grepWithin is grep once some line matches, or after d: a process's
// output is read in the background, so a line it logged while answering
// a request may reach p.lines a moment after the answer.
func (p *proc) grepWithin(d time.Duration, substrs ...string) []string {
	deadline := time.Now().Add(d)
	for {
		lines := p.grep(substrs...)
		if len(lines) > 0 || time.Now().After(deadline) {
			return lines
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *proc) grep(substrs ...string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, l := range p.lines {
		low := strings.ToLower(l)
		for _, s := range substrs {
			if strings.Contains(low, strings.ToLower(s)) {
				out = append(out, l)
				break
			}
		}
	}
	return out
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM (a clean close) and waits up to d, then kills.
func (p *proc) stop(d time.Duration) error {
	if p.exited() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(d):
		p.kill()
		return fmt.Errorf("%s did not exit within %v of SIGTERM; killed", p.name, d)
	}
}

// kill ends the process group at once and waits for it (bounded).
func (p *proc) kill() {
	if p.cmd.Process == nil || p.exited() {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
	}
}

// tail returns the last n lines of the process's output.
func (p *proc) tail(n int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := max(0, len(p.lines)-n)
	var b bytes.Buffer
	for _, l := range p.lines[i:] {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}
