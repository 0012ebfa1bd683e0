package main

import (
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coordhost/coordhost"
	"github.com/coordhost/coordhost/internal/testtool"
)

// TestServeDrainsOnSIGTERM: serve starts, is ready, and on SIGTERM drains,
// flushes and exits 0.
func TestServeDrainsOnSIGTERM(t *testing.T) {
	var out testtool.LogBuffer
	ready := make(chan *coordhost.Coordhost, 1)
	code := make(chan int, 1)
	args := []string{"--data.dir=" + t.TempDir(), "--kafka.listen=127.0.0.1:0", "--admin.listen=127.0.0.1:0"}
	go func() { code <- runServe(args, nil, &out, func(s *coordhost.Coordhost) { ready <- s }) }()
	var srv *coordhost.Coordhost
	select {
	case srv = <-ready:
	case c := <-code:
		t.Fatalf("serve exited %d before starting:\n%s", c, out.String())
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not start in 30 s")
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + srv.AdminAddr() + "/readyz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("readyz: %v %v", resp, err)
	}
	resp.Body.Close()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-code:
		if c != 0 || !strings.Contains(out.String(), "msg=draining") || !strings.Contains(out.String(), "msg=stopped") {
			t.Fatalf("exit %d, log:\n%s", c, out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop within 30 s of SIGTERM")
	}
}

func TestServeRejectsBadConfig(t *testing.T) {
	var out testtool.LogBuffer
	if c := runServe([]string{"--dataplane.mode=cloud"}, nil, &out, nil); c != 2 || !strings.Contains(out.String(), `dataplane.mode = "cloud"`) {
		t.Fatalf("exit %d, output %q", c, out.String())
	}
	if c := runServe(nil, []string{"COORDHOST_KAFKA_LISEN=x"}, &out, nil); c != 2 || !strings.Contains(out.String(), "COORDHOST_KAFKA_LISEN") {
		t.Fatalf("exit %d, output %q", c, out.String())
	}
}

func TestConfigCommand(t *testing.T) {
	var out, errb testtool.LogBuffer
	if c := runConfig([]string{"--config", "../../docs/coordhost.example.yaml", "--group=orders-payments"}, nil, &out, &errb); c != 0 {
		t.Fatalf("exit %d: %s", c, errb.String())
	}
	if !strings.Contains(out.String(), `"source": "override \"orders-payments\""`) {
		t.Fatalf("group config output:\n%s", out.String())
	}
	out = testtool.LogBuffer{}
	if c := runConfig([]string{"--data.dir=/srv/ch"}, nil, &out, &errb); c != 0 || !strings.Contains(out.String(), `"value": "/srv/ch",`) {
		t.Fatalf("exit %d, output:\n%s", c, out.String())
	}
}
