//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coordhost/coordhost/host/assign"
	"github.com/coordhost/coordhost/host/plugin/plugintest"
	"github.com/coordhost/coordhost/internal/testtool"
)

const abDoc = "../../docs/AB-TESTING.md"

// docBlock is one ```sh block of a document.
type docBlock struct {
	line int // of the opening fence
	text string
	skip bool // the paragraph before it says it needs a Kafka Streams app
}

var needsApp = regexp.MustCompile(`(?i)needs a kafka streams app`)

// shellBlocks returns the ```sh blocks of doc in order, each marked skip
// when the paragraph right before it says "needs a Kafka Streams app".
func shellBlocks(doc string) ([]docBlock, error) {
	var out []docBlock
	lines := strings.Split(doc, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```sh" {
			continue
		}
		j := i - 1
		for j >= 0 && strings.TrimSpace(lines[j]) == "" {
			j--
		}
		var para []string
		for ; j >= 0 && strings.TrimSpace(lines[j]) != ""; j-- {
			para = append([]string{strings.TrimSpace(lines[j])}, para...)
		}
		b := docBlock{line: i + 1, skip: needsApp.MatchString(strings.Join(para, " "))}
		k := i + 1
		for ; k < len(lines) && strings.TrimSpace(lines[k]) != "```"; k++ {
			b.text += lines[k] + "\n"
		}
		if k == len(lines) {
			return nil, fmt.Errorf("line %d: ```sh block never closed", i+1)
		}
		out = append(out, b)
		i = k
	}
	return out, nil
}

// TestABTestingDoc runs the shell blocks of docs/AB-TESTING.md as written,
// in order, in one bash, in a temporary directory that holds what the
// page's "Running the examples" asks for: a freshly built coordhost on the
// PATH, the built-in plugins under build/plugins and testdata/sim. The
// server the page starts listens on loopback; the whole run is bounded.
func TestABTestingDoc(t *testing.T) {
	if testing.Short() {
		t.Skip("builds coordhost and its plugins")
	}
	bash := testtool.Require(t, "bash")
	for _, tool := range []string{"curl", "jq", "od"} {
		testtool.Require(t, tool)
	}
	data, err := os.ReadFile(abDoc)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := shellBlocks(string(data))
	if err != nil {
		t.Fatal(err)
	}
	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	ran, skipped := 0, 0
	for _, b := range blocks {
		if b.skip {
			skipped++
			continue
		}
		ran++
		fmt.Fprintf(&script, "echo '>>> docs/AB-TESTING.md:%d' >&2\n%s", b.line, b.text)
	}
	if ran < 6 || skipped == 0 {
		t.Fatalf("%d blocks to run, %d skipped: is the page or the parser broken?", ran, skipped)
	}
	for _, addr := range []string{"127.0.0.1:9092", "127.0.0.1:9644"} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			testtool.Missing(t, fmt.Sprintf("%s (the page's coordhost listens there): %v", addr, err))
		}
		ln.Close()
	}
	dir := docWorkdir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "-c", script.String())
	cmd.Dir = dir
	cmd.Env = docEnv(dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The page starts coordhost in the background: end the whole group.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "coordhost.log"))
		t.Fatalf("%v (ctx: %v)\nstdout:\n%s\nstderr (the last >>> names the failing block):\n%s\ncoordhost.log:\n%s",
			err, ctx.Err(), stdout.String(), stderr.String(), log)
	}
	t.Logf("%d blocks run, %d skipped; output:\n%s", ran, skipped, stdout.String())
	checkDocOutput(t, string(data), stdout.String())
}

// checkDocOutput: the table the page shows under "prints" is what the
// simulate block printed.
func checkDocOutput(t *testing.T, doc, out string) {
	i := strings.Index(doc, "    ASSIGNOR ")
	if i < 0 {
		t.Fatal("the page shows no simulate table")
	}
	for _, l := range strings.Split(doc[i:], "\n") {
		if !strings.HasPrefix(l, "    ") {
			break
		}
		if !strings.Contains(out, strings.TrimPrefix(l, "    ")+"\n") {
			t.Errorf("the page shows %q; the run printed:\n%s", l, out)
		}
	}
}

// docWorkdir builds coordhost into dir/bin and lays out build/plugins and
// testdata/sim as `make build plugins` leaves a checkout.
func docWorkdir(t *testing.T) string {
	dir := t.TempDir()
	goBin := testtool.Require(t, "go")
	build := exec.Command(goBin, "build", "-o", filepath.Join(dir, "bin", "coordhost"), ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	plugins := filepath.Join(dir, "build", "plugins")
	for name, b := range assign.Builtins {
		copyFile(t, plugintest.GoPluginPath(t, "plugins/assignor-"+name+"/wasm"), filepath.Join(plugins, b.File))
	}
	files, err := filepath.Glob("../../testdata/sim/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("testdata/sim: %v %v", files, err)
	}
	for _, f := range files {
		copyFile(t, f, filepath.Join(dir, "testdata", "sim", filepath.Base(f)))
	}
	return dir
}

// docEnv is the test's environment with dir/bin first on the PATH and no
// COORDHOST_* settings leaking in.
func docEnv(dir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "COORDHOST_") && !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	return append(env, "PATH="+filepath.Join(dir, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func copyFile(t *testing.T, from, to string) {
	data, err := os.ReadFile(from)
	if err == nil {
		err = os.MkdirAll(filepath.Dir(to), 0o755)
	}
	if err == nil {
		err = os.WriteFile(to, data, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestShellBlocks: the extraction finds blocks, their lines and the
// marker in the paragraph before a block, and refuses an unclosed block.
func TestShellBlocks(t *testing.T) {
	doc := "intro\n\n```sh\necho a\n```\n\nThis one *needs a Kafka\nStreams app*:\n\n```sh\necho b\necho c\n```\n\n```yaml\nx: 1\n```\n"
	got, err := shellBlocks(doc)
	if err != nil || len(got) != 2 || got[0] != (docBlock{line: 3, text: "echo a\n"}) ||
		got[1] != (docBlock{line: 10, text: "echo b\necho c\n", skip: true}) {
		t.Fatalf("%+v %v", got, err)
	}
	if _, err := shellBlocks("```sh\necho a\n"); err == nil || !strings.Contains(err.Error(), "never closed") {
		t.Fatalf("unclosed block: %v", err)
	}
	if _, err := shellBlocks(""); err != nil {
		t.Fatal(err)
	}
}
