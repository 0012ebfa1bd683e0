package plugin

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFilePolicyRelativeDir: a plugin directory given relative to the
// working directory (plugins.dir's default, build/plugins) serves its
// files by name, and still refuses what lies outside it.
func TestFilePolicyRelativeDir(t *testing.T) {
	root := t.TempDir()
	t.Chdir(root)
	if err := os.MkdirAll(filepath.Join("build", "plugins"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join("build", "plugins", "a.wasm"), "b.wasm"} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(root, "b.wasm"), filepath.Join("build", "plugins", "b.wasm")); err != nil {
		t.Fatal(err)
	}
	fp := FilePolicy{Dirs: []string{filepath.Join("build", "plugins")}}
	got, err := fp.Resolve("a.wasm")
	if want, _ := filepath.EvalSymlinks(filepath.Join(root, "build", "plugins", "a.wasm")); err != nil || got != want {
		t.Fatalf("a.wasm: %q, %v; want %q", got, err, want)
	}
	if _, err := fp.Resolve("b.wasm"); err == nil {
		t.Fatal("b.wasm links outside the directory and was accepted")
	}
}
