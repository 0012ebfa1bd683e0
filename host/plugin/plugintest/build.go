// Package plugintest builds WebAssembly plugins for tests: Go plugins with
// the standard toolchain (GOOS=wasip1, c-shared) and C plugins with clang
// and wasi-libc, caching the results for the life of the test binary (and,
// for C, across runs, keyed by the sources' hash).
package plugintest

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/coordhost/coordhost/internal/testtool"
)

// Root returns the module root (the directory holding go.mod).
func Root(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("plugintest: no go.mod above the working directory")
		}
		dir = parent
	}
}

var (
	mu    sync.Mutex
	built = map[string]string{} // key -> .wasm path
)

func cacheDir(tb testing.TB) string {
	dir := filepath.Join(os.TempDir(), "coordhost-plugintest")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// WasmGCFlags are the compiler flags of every Go plugin build, the same as
// the Makefile's WASM_GCFLAGS: the sticky and HA algorithm packages are
// compiled without bounds checks for wasm (their indices come from a
// request the decoder has range-checked, the host validates every
// response, and the native builds, which the parity tests run, keep the
// checks; see docs/BENCHMARKS.md for the measured gain).
var WasmGCFlags = []string{
	"-gcflags=github.com/coordhost/coordhost/plugins/assignor-sticky=-B",
	"-gcflags=github.com/coordhost/coordhost/plugins/assignor-ha=-B",
}

// GoPlugin builds the main package at pkg (relative to the module root,
// e.g. "plugins/assignor-sticky/wasm") and returns the .wasm bytes.
func GoPlugin(tb testing.TB, pkg string) []byte {
	tb.Helper()
	return read(tb, goPluginPath(tb, pkg))
}

// GoPluginPath is GoPlugin, returning the path of the built .wasm.
func GoPluginPath(tb testing.TB, pkg string) string {
	tb.Helper()
	return goPluginPath(tb, pkg)
}

func goPluginPath(tb testing.TB, pkg string) string {
	tb.Helper()
	mu.Lock()
	defer mu.Unlock()
	key := "go:" + pkg
	if p, ok := built[key]; ok {
		return p
	}
	goBin := testtool.Require(tb, "go")
	out, err := os.MkdirTemp(cacheDir(tb), "go-")
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(out, strings.ReplaceAll(pkg, "/", "_")+".wasm")
	args := append([]string{"build", "-buildmode=c-shared", "-trimpath"}, WasmGCFlags...)
	cmd := exec.Command(goBin, append(args, "-o", path, "./"+pkg)...)
	cmd.Dir = Root(tb)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("building %s: %v\n%s", pkg, err, b)
	}
	built[key] = path
	return path
}

// CPlugin compiles the C file src (relative to the module root) with clang
// for wasm32-wasi as a reactor, with -D for each define, and returns the
// .wasm bytes. clang missing skips the test, or fails it under CI=true.
func CPlugin(tb testing.TB, src string, defines ...string) []byte {
	tb.Helper()
	return read(tb, CPluginPath(tb, src, defines...))
}

// CPluginPath is CPlugin returning the path of the built file.
func CPluginPath(tb testing.TB, src string, defines ...string) string {
	tb.Helper()
	clang := testtool.Require(tb, "clang") // with wasi-libc, lld and libclang-rt-dev-wasm32
	root := Root(tb)
	abs := filepath.Join(root, src)
	h := sha256.New()
	// The source, a header beside it, and the shared ABI header that
	// plugins elsewhere include by relative path.
	for _, f := range []string{abs, filepath.Join(filepath.Dir(abs), "abi1.h"), filepath.Join(root, "testdata", "plugins", "c", "abi1.h")} {
		b, _ := os.ReadFile(f)
		h.Write(b)
	}
	args := []string{"--target=wasm32-wasi", "-O2", "-mexec-model=reactor"}
	for _, d := range defines {
		args = append(args, "-D"+d)
	}
	h.Write([]byte(strings.Join(args, " ")))
	key := hex.EncodeToString(h.Sum(nil))[:20]
	path := filepath.Join(cacheDir(tb), key+".wasm")
	mu.Lock()
	defer mu.Unlock()
	if _, err := os.Stat(path); err == nil {
		return path
	}
	tmp := path + ".tmp" + hex.EncodeToString(h.Sum(nil))[20:28]
	cmd := exec.Command(clang, append(args, "-o", tmp, abs)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("clang %s: %v\n%s", src, err, b)
	}
	if err := os.Rename(tmp, path); err != nil {
		tb.Fatal(err)
	}
	return path
}

func read(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
