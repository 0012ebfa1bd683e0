package plugin

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// DefaultMaxModuleBytes is the largest module file read when no limit is
// set (FilePolicy.MaxBytes, Config.MaxModuleBytes).
const DefaultMaxModuleBytes = 64 << 20

// Errors of FilePolicy.Resolve and of reading a module file; each names
// one reason a requested file is refused.
var (
	ErrPathEmpty   = errors.New(`no path: name a module file, {"path": "NAME.wasm"}`)
	ErrPathDotDot  = errors.New(`".." is not allowed in a plugin path`)
	ErrPathName    = errors.New("invalid plugin file name: letters, digits, '.', '_' and '-' only, not starting with '.'")
	ErrPathOutside = errors.New("not a file in a plugin directory (plugins.load.dirs)")
	ErrNotRegular  = errors.New("not a regular file")
	ErrTooLarge    = errors.New("module file larger than the limit (plugins.max.bytes)")
)

// FilePolicy says which module files may be loaded on request (the admin
// API): regular files in one of Dirs, at most MaxBytes long.
type FilePolicy struct {
	Dirs     []string
	MaxBytes int64 // 0: DefaultMaxModuleBytes
}

// Resolve checks a requested module path and returns the file to load. A
// bare file name is looked up in Dirs in order; an absolute path must lie
// in one of them. Paths outside Dirs are refused before the file system is
// consulted, so the answer says nothing about whether they exist; symbolic
// links are followed and their targets must lie in Dirs too.
func (fp FilePolicy) Resolve(requested string) (string, error) {
	if requested == "" {
		return "", ErrPathEmpty
	}
	fail := func(err error) (string, error) { return "", fmt.Errorf("plugin path %q: %w", requested, err) }
	for _, part := range strings.FieldsFunc(requested, func(r rune) bool { return r == '/' || r == filepath.Separator }) {
		if part == ".." {
			return fail(ErrPathDotDot)
		}
	}
	if !validName(filepath.Base(requested)) {
		return fail(ErrPathName)
	}
	var candidates []string
	switch {
	case filepath.IsAbs(requested):
		if _, ok := fp.dirOf(filepath.Clean(requested), false); !ok {
			return fail(ErrPathOutside)
		}
		candidates = []string{filepath.Clean(requested)}
	case strings.ContainsAny(requested, `/`+string(filepath.Separator)):
		return fail(ErrPathName)
	default:
		for _, d := range fp.Dirs {
			candidates = append(candidates, filepath.Join(d, requested))
		}
	}
	var lastErr error = ErrPathOutside
	for _, c := range candidates {
		path, err := fp.check(c)
		if err == nil {
			return path, nil
		}
		lastErr = err
		if !errors.Is(err, os.ErrNotExist) {
			break
		}
	}
	return fail(lastErr)
}

// check resolves symbolic links in path (which lies in a plugin
// directory) and checks the target: in a plugin directory, a regular file,
// within the size limit.
func (fp FilePolicy) check(path string) (string, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("no such file in the plugin directories: %w", os.ErrNotExist)
		}
		return "", err
	}
	// A relative directory (the default build/plugins) gives a relative
	// target; dirOf compares absolute paths.
	if real, err = filepath.Abs(real); err != nil {
		return "", err
	}
	if _, ok := fp.dirOf(real, true); !ok {
		return "", ErrPathOutside
	}
	fi, err := os.Lstat(real)
	if err != nil {
		return "", err
	}
	return real, checkModuleFile(fi, fp.maxBytes())
}

// dirOf reports whether path lies directly or deeper in one of the
// directories (with their symbolic links resolved when real is set).
func (fp FilePolicy) dirOf(path string, real bool) (string, bool) {
	for _, d := range fp.Dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			continue
		}
		if real {
			if abs, err = filepath.EvalSymlinks(abs); err != nil {
				continue
			}
		}
		if rel, err := filepath.Rel(abs, path); err == nil && rel != "." && !strings.HasPrefix(rel, "..") && !filepath.IsAbs(rel) {
			return abs, true
		}
	}
	return "", false
}

func (fp FilePolicy) maxBytes() int64 {
	if fp.MaxBytes > 0 {
		return fp.MaxBytes
	}
	return DefaultMaxModuleBytes
}

func validName(name string) bool {
	if name == "" || name[0] == '.' {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func checkModuleFile(fi os.FileInfo, max int64) error {
	if !fi.Mode().IsRegular() {
		return ErrNotRegular
	}
	if fi.Size() > max {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, fi.Size(), max)
	}
	return nil
}

// ReadModule reads a module file as LoadFile does: a regular file of at
// most max bytes (DefaultMaxModuleBytes when max <= 0).
func ReadModule(path string, max int64) ([]byte, error) { return readModule(path, max) }

// readModule reads a module file: a regular file (checked before it is
// opened, so a FIFO or device is never read) of at most max bytes.
func readModule(path string, max int64) ([]byte, error) {
	if max <= 0 {
		max = DefaultMaxModuleBytes
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := checkModuleFile(fi, max); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(b)) > max {
		err = fmt.Errorf("%s: %w: grew past %d bytes", path, ErrTooLarge, max)
	}
	return b, err
}
