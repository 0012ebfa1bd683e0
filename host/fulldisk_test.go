package host_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// fullDiskScript mounts a tmpfs on $DIR (in its own user and mount
// namespace), runs coordhost on it, and on the test's signal files in
// $CTL fills the file system, frees it, then kills coordhost with SIGKILL
// and copies the data directory out of the tmpfs.
const fullDiskScript = `set -e
mount -t tmpfs -o size=64m tmpfs "$DIR"
"$@" >"$CTL/log" 2>&1 &
pid=$!
await() { while [ ! -e "$CTL/$1" ]; do sleep 0.05; done; }
await fill
dd if=/dev/zero of="$DIR/filler" bs=64k 2>/dev/null || true
touch "$CTL/filled"
await free
rm -f "$DIR/filler"
touch "$CTL/freed"
await stop
kill -9 $pid
wait $pid || true
mkdir "$CTL/data"
cp -a "$DIR/." "$CTL/data/"
touch "$CTL/copied"
`

// TestFullDiskThroughBinary fills the real file system under data.dir (a
// size-limited tmpfs in a user namespace): joins are acknowledged or
// answered NOT_COORDINATOR, /readyz turns 503 while the store fails and
// 200 once space is freed; after a SIGKILL every acknowledged join is
// there on restart, and a join answered NOT_COORDINATOR left nothing.
func TestFullDiskThroughBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the coordhost binary")
	}
	if _, err := exec.LookPath("unshare"); err != nil && os.Getenv("CI") == "true" {
		t.Fatal("unshare (util-linux) is required under CI=true")
	}
	if out, err := exec.Command("unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /tmp").CombinedOutput(); err != nil {
		t.Skipf("no unprivileged tmpfs mount here (user namespaces disabled?): %v %s", err, out)
	}
	root, ctl := t.TempDir(), t.TempDir()
	dir := filepath.Join(root, "data")
	must(t, os.Mkdir(dir, 0o755))
	port, adminPort := freePort(t), freePort(t)
	args := append([]string{"--data.dir=" + dir, "--kafka.listen=127.0.0.1:" + port, "--admin.listen=127.0.0.1:" + adminPort,
		"--plugins.dir=" + filepath.Join(root, "no-plugins")}, fastGroups...)
	cmd := exec.Command("unshare", append([]string{"-rm", "sh", "-c", fullDiskScript, "sh", coordhostBinary(t)}, args...)...)
	cmd.Env = append(os.Environ(), "DIR="+dir, "CTL="+ctl)
	must(t, cmd.Start())
	t.Cleanup(func() {
		_ = os.WriteFile(filepath.Join(ctl, "fill"), nil, 0o644)
		_ = os.WriteFile(filepath.Join(ctl, "free"), nil, 0o644)
		_ = os.WriteFile(filepath.Join(ctl, "stop"), nil, 0o644)
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(ctl, "log"))
			t.Logf("coordhost log:\n%s", b)
		}
	})
	signal := func(name, await string) {
		t.Helper()
		must(t, os.WriteFile(filepath.Join(ctl, name), nil, 0o644))
		waitFor(t, 60*time.Second, await, func() error {
			_, err := os.Stat(filepath.Join(ctl, await))
			return err
		})
	}
	addr := "127.0.0.1:" + port
	waitFor(t, 30*time.Second, "coordhost listening", func() error {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err
	})
	readyz := func() (int, string) {
		resp, err := http.Get("http://127.0.0.1:" + adminPort + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := &coordinator{cl: newClient(t, addr)}
	join := func(group string) int16 {
		t.Helper()
		code, _, err := newStreamsMember(cl, group, "fd-in").heartbeat(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return code
	}
	var acked []string
	if code := join("fd-0"); code != 0 {
		t.Fatalf("join before the disk is full: %v", kerr.ErrorForCode(code))
	}
	acked = append(acked, "fd-0")

	signal("fill", "filled")
	// Pages bbolt already allocated are reused first: joins succeed until
	// the store needs a new page. An append reusing a page can still
	// succeed between two refusals (and make the store healthy again), so
	// joins go on until a refusal is seen with /readyz unready.
	refused, unready := "", false
	for i := 1; i <= 2000 && !unready; i++ {
		g := fmt.Sprintf("fd-%d", i)
		switch code := join(g); code {
		case 0:
			acked = append(acked, g)
		case kerr.NotCoordinator.Code:
			refused = g
			code, body := readyz()
			unready = code == http.StatusServiceUnavailable && strings.Contains(body, "no space left on device")
		default:
			t.Fatalf("join with a full disk: %v", kerr.ErrorForCode(code))
		}
	}
	if !unready {
		t.Fatalf("%d joins acknowledged with a full disk, last refused %q, never /readyz 503 with ENOSPC", len(acked), refused)
	}

	signal("free", "freed")
	waitFor(t, 30*time.Second, "a join once space is freed", func() error {
		if code := join("fd-after"); code != 0 {
			return kerr.ErrorForCode(code)
		}
		return nil
	})
	acked = append(acked, "fd-after")
	if code, body := readyz(); code != http.StatusOK {
		t.Fatalf("/readyz once space is freed: %d %s", code, body)
	}

	signal("stop", "copied")
	p := startProc(t, filepath.Join(ctl, "data"), freePort(t), 1)
	cl2 := &coordinator{cl: newClient(t, p.addr)}
	for _, g := range acked {
		d, err := describeStreams(ctx, cl2, g)
		if err != nil || len(d.Members) != 1 {
			t.Fatalf("acknowledged group %s after the restart: %v, %d members", g, err, len(d.Members))
		}
	}
	if d, err := describeStreams(ctx, cl2, refused); err == nil && len(d.Members) > 0 {
		t.Fatalf("group %s, whose join was refused, has members after the restart", refused)
	}
	t.Logf("%d joins acknowledged (all found after the restart), %s refused with the disk full", len(acked), refused)
}
