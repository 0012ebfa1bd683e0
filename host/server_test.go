package host_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host"
	"github.com/coordhost/coordhost/host/config"
	"github.com/coordhost/coordhost/host/wire"
	"github.com/coordhost/coordhost/internal/testtool"
)

// startHost starts coordhost on loopback ephemeral ports with a fresh (or
// the given) data directory.
func startHost(t *testing.T, dataDir string, args ...string) *host.Server {
	t.Helper()
	srv, err := tryStart(t, dataDir, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopHost(t, srv) })
	return srv
}

func tryStart(t *testing.T, dataDir string, args ...string) (*host.Server, error) {
	t.Helper()
	if dataDir == "" {
		dataDir = t.TempDir()
	}
	base := []string{"--data.dir=" + dataDir, "--kafka.listen=127.0.0.1:0", "--admin.listen=127.0.0.1:0"}
	cfg, err := config.Load(append(base, args...), nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return host.Start(ctx, host.Options{Config: cfg, Log: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))})
}

func stopHost(t *testing.T, srv *host.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func timeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// produceConsume produces n records to topic through addr and consumes
// them back by partition (no consumer group), returning the values read.
func produceConsume(t *testing.T, addr, topic string, values []string) []string {
	t.Helper()
	ctx := timeout(t)
	p, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, v := range values {
		if err := p.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
			t.Fatalf("produce through coordhost: %v", err)
		}
	}
	return consume(t, addr, topic, len(values))
}

func consume(t *testing.T, addr, topic string, n int) []string {
	t.Helper()
	ctx := timeout(t)
	c, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}), kgo.FetchMaxWait(250*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got []string
	for len(got) < n {
		fs := c.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %v before timeout: %v", got, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch through coordhost: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

// TestNewcomerKgoProduceConsume is the newcomer's path with franz-go: the
// default embedded data plane, produce, consume by partition, no group.
func TestNewcomerKgoProduceConsume(t *testing.T) {
	srv := startHost(t, "")
	want := []string{"one", "two", "three"}
	if got := produceConsume(t, srv.KafkaAddr(), "newcomer", want); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("consumed %v, want %v", got, want)
	}
}

// TestNewcomerKcat is the documented kcat one-liner pair (docs/CONFIG.md,
// "First run") against coordhost.
func TestNewcomerKcat(t *testing.T) {
	kcat := testtool.Require(t, "kcat")
	srv := startHost(t, "")
	ctx := timeout(t)
	produce := exec.CommandContext(ctx, kcat, "-b", srv.KafkaAddr(), "-t", "hello", "-P")
	produce.Stdin = strings.NewReader("hello coordhost\nsecond line\n")
	if out, err := produce.CombinedOutput(); err != nil {
		t.Fatalf("kcat -P: %v\n%s", err, out)
	}
	out, err := exec.CommandContext(ctx, kcat, "-b", srv.KafkaAddr(), "-t", "hello", "-C", "-o", "beginning", "-e", "-q").Output()
	if err != nil {
		t.Fatalf("kcat -C: %v\n%s", err, out)
	}
	if got := string(out); got != "hello coordhost\nsecond line\n" {
		t.Fatalf("kcat consumed %q", got)
	}
}

// TestRestartKeepsRecords: the embedded data plane lives under data.dir
// and survives a drain and restart.
func TestRestartKeepsRecords(t *testing.T) {
	dir := t.TempDir()
	srv, err := tryStart(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	produceConsume(t, srv.KafkaAddr(), "durable", []string{"a", "b"})
	stopHost(t, srv)
	srv = startHost(t, dir)
	if got := consume(t, srv.KafkaAddr(), "durable", 2); strings.Join(got, ",") != "a,b" {
		t.Fatalf("after restart consumed %v", got)
	}
}

// TestStartRefusesCorruptStore: a damaged coordhost.db fails start loudly
// and is left untouched.
func TestStartRefusesCorruptStore(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, host.StoreFile)
	garbage := bytes.Repeat([]byte("garbage!"), 8192)
	os.WriteFile(path, garbage, 0o600)
	srv, err := tryStart(t, dir)
	if err == nil {
		stopHost(t, srv)
		t.Fatal("started on a corrupted store")
	}
	if !strings.Contains(err.Error(), "corrupted") || !strings.Contains(err.Error(), path) {
		t.Fatalf("unclear error: %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, garbage) {
		t.Fatal("the corrupted store was modified")
	}
}

func TestAdminEndpoints(t *testing.T) {
	srv := startHost(t, "", "--admin.token=s3cret", "--groups.defaults.streams.num.standby.replicas=2")
	produceConsume(t, srv.KafkaAddr(), "metrics", []string{"x"})
	base := "http://" + srv.AdminAddr()
	hc := &http.Client{Timeout: 10 * time.Second}
	call := func(method, path, token string) (int, string) {
		req, _ := http.NewRequest(method, base+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct {
		method, path, token string
		code                int
		body                string
	}{
		{"GET", "/healthz", "", 200, "ok"},
		{"GET", "/readyz", "", 200, "ready"},
		{"GET", "/metrics", "", 401, "Bearer"},
		{"GET", "/v1/groups", "wrong", 401, "Bearer"},
		{"GET", "/metrics", "s3cret", 200, `coordhost_kafka_requests_total{api="Produce"}`},
		{"GET", "/v1/groups", "s3cret", 501, "group coordination is not wired"},
		{"GET", "/v1/groups/orders", "s3cret", 501, "group coordination is not wired"},
		{"GET", "/v1/plugins", "s3cret", 501, "plugin host is not wired"},
		{"POST", "/v1/plugins", "", 401, "Bearer"},
		{"DELETE", "/v1/plugins/sticky", "wrong", 401, "Bearer"},
		{"POST", "/v1/plugins", "s3cret", 501, "plugin host is not wired"},
	} {
		code, body := call(c.method, c.path, c.token)
		if code != c.code || !strings.Contains(body, c.body) {
			t.Errorf("%s %s: %d %q, want %d containing %q", c.method, c.path, code, body, c.code, c.body)
		}
	}
	code, body := call("GET", "/v1/groups/orders/config", "s3cret")
	var out struct {
		Config []config.Setting `json:"config"`
	}
	if err := json.Unmarshal([]byte(body), &out); code != 200 || err != nil {
		t.Fatalf("config: %d %s", code, body)
	}
	for _, s := range out.Config {
		if s.Key == "streams.num.standby.replicas" && (s.Value != float64(2) || s.Source != "groups.defaults (flag)") {
			t.Errorf("effective standby replicas: %+v", s)
		}
	}
}

func TestPluginManagementDisabledWithoutToken(t *testing.T) {
	srv := startHost(t, "")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Post("http://"+srv.AdminAddr()+"/v1/plugins", "application/octet-stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("status %d, want 403", resp.StatusCode)
	}
}

// rawConn sends raw kmsg requests to coordhost and reads their responses.
type rawConn struct {
	t    *testing.T
	c    net.Conn
	br   *bufio.Reader
	corr int32
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	return dialRawFrom(t, "", addr)
}

// dialRawFrom is dialRaw from the local IP address from ("" for any).
func dialRawFrom(t *testing.T, from, addr string) *rawConn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(20 * time.Second))
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, br: bufio.NewReader(c)}
}

func (r *rawConn) do(req kmsg.Request, version int16) kmsg.Response {
	r.t.Helper()
	req.SetVersion(version)
	r.corr++
	if _, err := r.c.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw")).AppendRequest(nil, req, r.corr)); err != nil {
		r.t.Fatal(err)
	}
	frame, err := wire.ReadFrame(r.br, 64<<20)
	if err != nil {
		r.t.Fatalf("%s v%d: %v", kmsg.NameForKey(req.Key()), version, err)
	}
	_, resp, err := wire.ParseResponse(frame, req)
	if err != nil {
		r.t.Fatal(err)
	}
	return resp
}

// TestJavaClientsProduceConsume: Kafka's own Java producer (idempotent,
// acks=all) and consumer (assign, no group) work through coordhost.
func TestJavaClientsProduceConsume(t *testing.T) {
	srv := startHost(t, "")
	out := string(testtool.JavaMain(t, "../interop/wireframes", "io.coordhost.interop.WireFrames", "clients", srv.KafkaAddr(), "java-topic"))
	if !strings.Contains(out, "consumed java-1,java-2,java-3") {
		t.Fatalf("Java clients through coordhost: %s", out)
	}
}

// recordingCoordinator is a GroupCoordinator built from the running server.
type recordingCoordinator struct {
	srv      *host.Server
	keys     chan int16
	shutdown bool
}

func (r *recordingCoordinator) Handle(_ context.Context, req *wire.Request) (kmsg.Response, error) {
	r.keys <- req.Key
	return wire.ErrorResponse(req.Body, 0), nil
}

func (r *recordingCoordinator) Shutdown(context.Context) error { r.shutdown = true; return nil }

// TestCoordinatorFactory: the coordinator is built with the store and data
// plane open, receives group requests, and is shut down on drain.
func TestCoordinatorFactory(t *testing.T) {
	cfg, err := config.Load([]string{"--data.dir=" + t.TempDir(), "--kafka.listen=127.0.0.1:0", "--admin.listen=127.0.0.1:0"}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	rc := &recordingCoordinator{keys: make(chan int16, 1)}
	srv, err := host.Start(timeout(t), host.Options{Config: cfg, Coordinator: func(s *host.Server) (host.Wiring, error) {
		if s.Store() == nil || s.DataPlane() == nil {
			t.Error("coordinator built before the store and data plane were open")
		}
		rc.srv = s
		return host.Wiring{Coordinator: rc}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if rc.srv != srv {
		t.Fatal("factory got another server")
	}
	dialRaw(t, srv.KafkaAddr()).do(&kmsg.HeartbeatRequest{Group: "g"}, 4)
	if k := <-rc.keys; k != int16(kmsg.Heartbeat) {
		t.Fatalf("coordinator got key %d", k)
	}
	stopHost(t, srv)
	if !rc.shutdown {
		t.Fatal("coordinator not shut down on drain")
	}
}

func wireReadFrame(r *rawConn) ([]byte, error) {
	r.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	f, err := wire.ReadFrame(r.br, 1<<20)
	if err == nil {
		_, _, err = wire.ParseResponse(f, kmsg.NewPtrApiVersionsRequest())
	}
	return f, err
}

// A start on the embedded data plane warns that exactly-once does not
// survive a crash of the process; docs/RELIABILITY.md says why.
func TestEmbeddedStartWarnsAboutExactlyOnce(t *testing.T) {
	var logs strings.Builder
	var mu sync.Mutex
	cfg, err := config.Load([]string{"--data.dir=" + t.TempDir(), "--kafka.listen=127.0.0.1:0", "--admin.listen=127.0.0.1:0"}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := host.Start(ctx, host.Options{Config: cfg, Log: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	stopHost(t, srv)
	mu.Lock()
	defer mu.Unlock()
	if out := logs.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "exactly-once") || !strings.Contains(out, "dataplane.mode=external") {
		t.Fatalf("no exactly-once warning at an embedded start; log:\n%s", out)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
