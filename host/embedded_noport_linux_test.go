package host_test

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// listeningPorts returns the TCP ports this process listens on, from
// /proc/net/tcp{,6} (state 0A, LISTEN) and the sockets among its open
// file descriptors.
func listeningPorts(t *testing.T) map[int]bool {
	t.Helper()
	mine := map[string]bool{}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasPrefix(l, "socket:[") {
			mine[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	ports := map[int]bool{}
	for _, f := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		file, err := os.Open(f)
		if err != nil {
			continue // no IPv6
		}
		sc := bufio.NewScanner(file)
		sc.Scan() // header
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" || !mine[fields[9]] {
				continue
			}
			_, hexPort, _ := strings.Cut(fields[1], ":")
			p, err := strconv.ParseInt(hexPort, 16, 32)
			if err != nil {
				t.Fatalf("%s: local address %q", f, fields[1])
			}
			ports[int(p)] = true
		}
		file.Close()
	}
	return ports
}

func portOf(t *testing.T, addr string) int {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return n
}

// TestEmbeddedDataPlaneOpensNoPort: coordhost in embedded mode listens on
// its Kafka and admin listeners and on no other TCP port — the embedded
// cluster is reached in memory only — while produce, auto-creation and
// fetch through coordhost work, and no response shows the embedded
// cluster's address.
func TestEmbeddedDataPlaneOpensNoPort(t *testing.T) {
	before := listeningPorts(t)
	srv := startLoopHost(t, "")
	want := map[int]bool{portOf(t, srv.KafkaAddr()): true, portOf(t, srv.AdminAddr()): true}
	if got := produceConsume(t, srv.KafkaAddr(), "noport", []string{"a", "b"}); fmt.Sprint(got) != "[a b]" {
		t.Fatalf("read back %v", got)
	}
	var opened []int
	after := listeningPorts(t)
	for p := range want {
		if !after[p] {
			t.Fatalf("listener port %d not found listening in /proc: the check proves nothing (found %v)", p, after)
		}
	}
	for p := range after {
		if !before[p] && !want[p] {
			opened = append(opened, p)
		}
	}
	if len(opened) > 0 {
		t.Fatalf("the embedded mode listens on TCP ports %v beyond its listeners %v", opened, want)
	}
	for p := range want {
		if before[p] {
			t.Fatalf("port %d was listening before the start: the check proves nothing", p)
		}
	}
	// Metadata, DescribeCluster and a transaction's FindCoordinator name
	// coordhost's listener, never the embedded cluster's address
	cl := newClient(t, srv.KafkaAddr())
	ctx := timeout(t)
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType, fc.CoordinatorKey = 1, "noport-txn"
	fcr, err := fc.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	shown := []string{net.JoinHostPort(fcr.Host, strconv.Itoa(int(fcr.Port)))}
	for _, b := range md.Brokers {
		shown = append(shown, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))))
	}
	for _, b := range dc.Brokers {
		shown = append(shown, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))))
	}
	for _, a := range shown {
		if a != srv.KafkaAddr() {
			t.Errorf("a response names broker %s, not coordhost's listener %s (all: %v)", a, srv.KafkaAddr(), shown)
		}
	}
}
