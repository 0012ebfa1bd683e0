package plugin

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFilePolicyResolve: a module file is loaded on request only from the
// plugin directories, by a valid name, when it is a regular file within
// the size limit; each refusal has its own error, and a path outside the
// directories gets the same answer whether or not it exists.
func TestFilePolicyResolve(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	write := func(d, name string, n int) string {
		p := filepath.Join(d, name)
		if err := os.WriteFile(p, make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := write(dir, "ok.wasm", 100)
	write(dir, "big.wasm", 2000)
	outside := write(other, "x.wasm", 10)
	if err := os.Symlink(outside, filepath.Join(dir, "escape.wasm")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.wasm")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.wasm"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub.wasm"), 0o755); err != nil {
		t.Fatal(err)
	}
	fp := FilePolicy{Dirs: []string{dir}, MaxBytes: 1000}
	for _, c := range []struct {
		path string
		want error // nil: loads
	}{
		{"ok.wasm", nil},
		{ok, nil},
		{"", ErrPathEmpty},
		{"../" + filepath.Base(other) + "/x.wasm", ErrPathDotDot},
		{dir + "/../" + filepath.Base(other) + "/x.wasm", ErrPathDotDot},
		{"..", ErrPathDotDot},
		{".hidden.wasm", ErrPathName},
		{"a b.wasm", ErrPathName},
		{"sub/ok.wasm", ErrPathName},
		{outside, ErrPathOutside},
		{"/dev/zero", ErrPathOutside},
		{"/etc/passwd", ErrPathOutside},
		{"escape.wasm", ErrPathOutside},
		{"zero.wasm", ErrPathOutside},
		{"fifo.wasm", ErrNotRegular},
		{"sub.wasm", ErrNotRegular},
		{"big.wasm", ErrTooLarge},
		{"missing.wasm", os.ErrNotExist},
	} {
		got, err := fp.Resolve(c.path)
		switch {
		case c.want == nil && err != nil:
			t.Errorf("%q: %v, want it loaded", c.path, err)
		case c.want == nil && got != ok:
			t.Errorf("%q resolved to %q, want %q", c.path, got, ok)
		case c.want != nil && !errors.Is(err, c.want):
			t.Errorf("%q: error %v, want %v", c.path, err, c.want)
		}
	}
	// Devices are refused as files even in a configured directory.
	if _, err := (FilePolicy{Dirs: []string{"/dev"}}).Resolve("/dev/zero"); !errors.Is(err, ErrNotRegular) {
		t.Errorf("/dev/zero with /dev configured: %v, want %v", err, ErrNotRegular)
	}
	// Outside the directories, existing and missing paths read alike.
	_, e1 := fp.Resolve("/etc/passwd")
	_, e2 := fp.Resolve("/no/such/passwd")
	if strings.ReplaceAll(e1.Error(), "/etc/passwd", "P") != strings.ReplaceAll(e2.Error(), "/no/such/passwd", "P") {
		t.Errorf("errors differ for an existing and a missing outside path: %q vs %q", e1, e2)
	}
}

// TestLoadFileRefusesNonRegularAndLarge: LoadFile itself reads only
// regular files within the size limit (a device would never end).
func TestLoadFileRefusesNonRegularAndLarge(t *testing.T) {
	if _, err := LoadFile(t.Context(), "/dev/zero", Config{}); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("/dev/zero: %v", err)
	}
	big := filepath.Join(t.TempDir(), "big.wasm")
	if err := os.WriteFile(big, make([]byte, 2048), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(t.Context(), big, Config{MaxModuleBytes: 1024}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("large file: %v", err)
	}
}

// FuzzFilePolicyResolve: Resolve never panics, and whatever it accepts is
// a regular file in the plugin directory.
func FuzzFilePolicyResolve(f *testing.F) {
	for _, s := range []string{"ok.wasm", "../ok.wasm", "/dev/zero", "a/../ok.wasm", ".", "..", "/", "ok.wasm/", "x\x00.wasm", "//ok.wasm"} {
		f.Add(s)
	}
	dir := f.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ok.wasm"), []byte("x"), 0o644); err != nil {
		f.Fatal(err)
	}
	fp := FilePolicy{Dirs: []string{dir}, MaxBytes: 10}
	f.Fuzz(func(t *testing.T, requested string) {
		got, err := fp.Resolve(requested)
		if err != nil {
			return
		}
		fi, serr := os.Lstat(got)
		if serr != nil || !fi.Mode().IsRegular() || filepath.Dir(got) != dir {
			t.Fatalf("%q resolved to %q (%v), outside %s or not a regular file", requested, got, serr, dir)
		}
	})
}
