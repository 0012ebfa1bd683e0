package host_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// peakRSS is a process's peak resident set (VmHWM) in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

// produceHead is the start of a flooding frame the server reads in full:
// the key and version of Produce v9, then flood's 0xff bytes, a
// malformed request it cannot tell before reading it.
var produceHead = []byte{0, 0, 0, 9}

// flood opens n connections to addr; each declares a frame of declared
// bytes, sends up to send bytes of it (head, then 0xff; with no head an
// unknown API key) and stays open until d has passed. It returns how
// many the server closed before that.
func flood(t *testing.T, addr string, n int, declared uint32, send int, d time.Duration, head []byte) (closed int) {
	t.Helper()
	end := time.Now().Add(d)
	chunk := bytes.Repeat([]byte{0xff}, 1<<20)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				t.Errorf("dial: %v", err)
				return
			}
			defer c.Close()
			c.SetDeadline(end)
			gone := func() {
				mu.Lock()
				closed++
				mu.Unlock()
			}
			if _, err := c.Write(binary.BigEndian.AppendUint32(nil, declared)); err != nil {
				gone()
				return
			}
			for sent := 0; sent < send; sent += len(chunk) {
				b := chunk[:min(len(chunk), send-sent)]
				if sent == 0 {
					b = append(append([]byte{}, head...), b[:max(len(b)-len(head), 0)]...)
				}
				if _, err := c.Write(b); err != nil {
					var ne net.Error
					if !errors.As(err, &ne) || !ne.Timeout() {
						gone()
					}
					return
				}
			}
			if _, err := c.Read(make([]byte, 1)); errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
				gone()
			}
		}()
	}
	wg.Wait()
	return closed
}

// TestMemoryBoundedUnderLargeFrames: 100 connections each sending a
// 100 MiB frame to the coordhost binary (default limits: a 256 MiB
// request budget, 100 MiB frames) leave its peak RSS at most 512 MiB;
// a client's small requests are answered during the flood and after it.
// Large frames are read unpaced (kafka.large.frame.bytes.per.second=0):
// the budget alone must bound memory while frames are read as fast as
// they come, many times over.
func TestMemoryBoundedUnderLargeFrames(t *testing.T) {
	dir := t.TempDir()
	p := startProc(t, dir, freePort(t), 1, "--kafka.large.frame.bytes.per.second=0")
	base := peakRSS(t, p.cmd.Process.Pid)
	small := make(chan error, 1)
	go func() {
		time.Sleep(time.Second) // the flood holds the budget by now
		c, err := net.DialTimeout("tcp", p.addr, 5*time.Second)
		if err != nil {
			small <- err
			return
		}
		defer c.Close()
		r := &rawConn{t: t, c: c, br: bufio.NewReader(c)}
		var slowest time.Duration
		for i := 0; i < 20; i++ {
			start := time.Now()
			if _, err := wireApiVersions(r); err != nil {
				small <- fmt.Errorf("request %d during the flood: %w", i, err)
				return
			}
			slowest = max(slowest, time.Since(start))
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("20 small requests during the flood, slowest %v", slowest)
		small <- nil
	}()
	closed := flood(t, p.addr, 100, 100<<20, 100<<20, 6*time.Second, produceHead)
	if err := <-small; err != nil {
		t.Error(err)
	}
	peak := peakRSS(t, p.cmd.Process.Pid)
	t.Logf("peak RSS %d MiB (at start %d MiB); %d of 100 frames read and refused in 6s", peak>>20, base>>20, closed)
	if peak > 512<<20 {
		t.Errorf("peak RSS %d MiB over 512 MiB", peak>>20)
	}
	if closed == 0 {
		t.Error("no frame was read in 6s: the budget never granted one")
	}
	probeServes(t, p.addr)
}

// TestPreAuthFramesRefused: on a listener requiring SASL, 100 connections
// each declaring a 100 MiB frame before authenticating are all closed at
// once, and the coordhost binary's peak RSS stays under 256 MiB; a SASL
// client then authenticates and is served.
func TestPreAuthFramesRefused(t *testing.T) {
	dp, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser("PLAIN", "coordhost", "coordpw"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dp.Close)
	p := startProc(t, t.TempDir(), freePort(t), 1, "--kafka.sasl.required=true", "--dataplane.mode=external",
		"--dataplane.bootstrap="+dp.ListenAddrs()[0], "--dataplane.sasl.mechanism=PLAIN",
		"--dataplane.sasl.username=coordhost", "--dataplane.sasl.password=coordpw",
		"--dataplane.offsets.identity=coordhost") // PLAIN: no delegation-token logins
	closed := flood(t, p.addr, 100, 100<<20, 8<<20, 10*time.Second, produceHead)
	peak := peakRSS(t, p.cmd.Process.Pid)
	t.Logf("peak RSS %d MiB; %d of 100 connections closed", peak>>20, closed)
	if closed != 100 {
		t.Errorf("%d of 100 pre-authentication frames over the limit were not refused", 100-closed)
	}
	if peak >= 256<<20 {
		t.Errorf("peak RSS %d MiB, want under 256 MiB", peak>>20)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.addr), kgo.SASL(plain.Auth{User: "coordhost", Pass: "coordpw"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Ping(timeout(t)); err != nil {
		t.Fatalf("an authenticated client after the flood: %v", err)
	}
}

// TestConnectionCapsAndIdleThroughBinary: the coordhost binary closes a
// connection over kafka.max.connections.per.ip at once and an idle one
// after kafka.idle.timeout.
func TestConnectionCapsAndIdleThroughBinary(t *testing.T) {
	p := startProc(t, t.TempDir(), freePort(t), 1, "--kafka.max.connections.per.ip=3", "--kafka.idle.timeout=1s")
	// The connections under test come from a loopback address of their
	// own: startProc's probe connection from 127.0.0.1 holds its slot
	// until the server reads its close, which on a loaded machine can be
	// after the third connection here arrives.
	const from = "127.0.0.2"
	var conns []*rawConn
	for i := 0; i < 3; i++ {
		c := dialRawFrom(t, from, p.addr)
		if _, err := wireApiVersions(c); err != nil {
			t.Fatalf("connection %d under the cap: %v", i, err)
		}
		conns = append(conns, c)
	}
	over := dialRawFrom(t, from, p.addr)
	if _, err := wireApiVersions(over); err == nil {
		t.Fatal("a fourth connection from one address was served")
	}
	probeServes(t, p.addr) // another address is not held to the first's cap
	start := time.Now()
	if _, err := conns[0].br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("idle connection: want closed, got %v", err)
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Fatalf("idle connection closed after %v", waited)
	}
	probeServesFrom(t, from, p.addr) // the idle connections' slots are free again
}

// probeServes asserts addr answers ApiVersions on a new connection.
func probeServes(t *testing.T, addr string) {
	t.Helper()
	probeServesFrom(t, "", addr)
}

// probeServesFrom asserts addr answers ApiVersions on a new connection
// from the local address from ("" for any).
func probeServesFrom(t *testing.T, from, addr string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := wireApiVersions(dialRawFrom(t, from, addr))
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("coordhost does not serve ApiVersions: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// wireApiVersions sends ApiVersions v0 on c and reads the answer; an
// error means no answer (the connection was closed).
func wireApiVersions(c *rawConn) ([]byte, error) {
	req := kmsg.NewPtrApiVersionsRequest()
	if _, err := c.c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)); err != nil {
		return nil, err
	}
	return wireReadFrame(c)
}
