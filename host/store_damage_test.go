package host_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDamagedStoreRefusedThenRepaired runs the coordhost binary on a data
// directory whose store is damaged at rest in each way it can be: start
// refuses with a message naming the store file and `coordhost repair`;
// repair moves the file aside, keeps every record whose checksum
// verifies and prints what it dropped; start then succeeds with exactly
// the kept records.
func TestDamagedStoreRefusedThenRepaired(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the coordhost binary")
	}
	src := t.TempDir()
	before := populateStore(t, src)
	cases := []struct {
		name   string
		damage func(t *testing.T, db string)
		// kept is the record count after repair (-1: the records before,
		// less what the repair output says it dropped).
		kept    int
		dropped string // a line the repair output must have
	}{
		{"empty file", func(t *testing.T, db string) { must(t, os.Truncate(db, 0)) }, 0, "UNREADABLE: the file is empty"},
		{"missing file", func(t *testing.T, db string) { must(t, os.Remove(db)) }, 0, "the store file is missing"},
		{"checksum mismatch", func(t *testing.T, db string) {
			b, err := os.ReadFile(db)
			must(t, err)
			n := bytes.Count(b, []byte("6789"))
			if n == 0 {
				t.Fatal("the group config value is not in the store file")
			}
			must(t, os.WriteFile(db, bytes.ReplaceAll(b, []byte("6789"), []byte("6788")), 0o600))
		}, before - 1, `group "dmg-b": 1 dropped (checksum mismatch)`},
		{"damaged pages", func(t *testing.T, db string) {
			b, err := os.ReadFile(db)
			must(t, err)
			for off := 2 * 4096; off+4096 <= len(b); off += 4096 {
				copy(b[off+8:off+16], bytes.Repeat([]byte{0xff}, 8)) // page flags and counts
			}
			must(t, os.WriteFile(db, b, 0o600))
		}, 0, "UNREADABLE"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, src, dir)
			db := filepath.Join(dir, "coordhost.db")
			c.damage(t, db)
			args := []string{"--data.dir=" + dir, "--kafka.listen=127.0.0.1:0", "--admin.listen=127.0.0.1:0",
				"--plugins.dir=" + filepath.Join(dir, "no-plugins")}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, coordhostBinary(t), args...).CombinedOutput()
			if err == nil {
				t.Fatalf("coordhost started on a damaged store:\n%s", out)
			}
			if !strings.Contains(string(out), db) || !strings.Contains(string(out), "coordhost repair") {
				t.Fatalf("the refusal does not name %s and coordhost repair:\n%s", db, out)
			}
			rep, err := exec.CommandContext(ctx, coordhostBinary(t), append([]string{"repair"}, args...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("repair: %v\n%s", err, rep)
			}
			t.Logf("refusal:\n%s\nrepair:\n%s", lastLines(out, 2), rep)
			if !strings.Contains(string(rep), c.dropped) {
				t.Fatalf("repair output lacks %q:\n%s", c.dropped, rep)
			}
			if c.name != "missing file" {
				if m, _ := filepath.Glob(db + ".damaged-*"); len(m) != 1 {
					t.Fatalf("the damaged file was not kept aside: %v", m)
				}
			}
			p := startProc(t, dir, freePort(t), 1)
			if got := storeRecordsAtStart(t, p.log); got != c.kept {
				t.Fatalf("started with %d records after repair, want %d (before damage: %d)\n%s", got, c.kept, before, rep)
			}
			if !strings.Contains(string(rep), "kept "+strconv.Itoa(c.kept)+" records") {
				t.Fatalf("repair output does not say it kept %d records:\n%s", c.kept, rep)
			}
		})
	}
}

// populateStore runs coordhost on dir, gives group dmg-a a streams member
// and group dmg-b a config override (streams.heartbeat.interval.ms =
// 6789, whose value the damage cases look for), stops it with SIGKILL and
// returns the store's record count on the next start.
func populateStore(t *testing.T, dir string) int {
	t.Helper()
	p := startProc(t, dir, freePort(t), 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kc := newClient(t, p.addr)
	m := newStreamsMember(&coordinator{cl: kc}, "dmg-a", "dmg-in")
	if code, _, err := m.heartbeat(ctx); err != nil || code != 0 {
		t.Fatalf("heartbeat: %v %v", err, kerr.ErrorForCode(code))
	}
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	alter.Version = 1
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "dmg-b"
	r.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("streams.heartbeat.interval.ms", "6789")}
	alter.Resources = append(alter.Resources, r)
	resp, err := alter.RequestWith(ctx, kc)
	if err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter: %v %+v", err, resp)
	}
	p.kill()
	q := startProc(t, dir, freePort(t), 9)
	n := storeRecordsAtStart(t, q.log)
	q.kill()
	if n < 2 {
		t.Fatalf("%d records in the store, want the member's and the config's", n)
	}
	return n
}

var storeOpened = regexp.MustCompile(`store opened.*records=(\d+)`)

func storeRecordsAtStart(t *testing.T, logPath string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(logPath)
		if m := storeOpened.FindSubmatch(b); m != nil {
			n, _ := strconv.Atoi(string(m[1]))
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("no store opened line:\n%s", b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	must(t, filepath.Walk(src, func(path string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		to := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, fi.Mode().Perm())
	}))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}
