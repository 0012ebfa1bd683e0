package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Module is the parsed view of a module the rules are checked on: its import
// graph and the syntax of core's non-test files.
type Module struct {
	Path  string // module path from go.mod
	Graph Graph
	Fset  *token.FileSet
	Core  map[string][]*ast.File // core package -> non-test files
	// Users are the non-test files outside core that import core, by
	// package.
	Users map[string][]*ast.File
}

// Load parses every non-test Go file under root (skipping testdata, vendor,
// hidden and build-output directories), whatever its build tags, so that
// wasm-only files are checked too.
func Load(root string) (*Module, error) {
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, err
	}
	m := &Module{Graph: Graph{}, Fset: token.NewFileSet(), Core: map[string][]*ast.File{}, Users: map[string][]*ast.File{}}
	for _, line := range strings.Split(string(gomod), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			m.Path = strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	if m.Path == "" {
		return nil, fmt.Errorf("%s: no module line", filepath.Join(root, "go.mod"))
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (name == "testdata" || name == "vendor" || name == "node_modules" ||
				name == "target" || name == "build" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		return m.addFile(root, p)
	})
	return m, err
}

func (m *Module) addFile(root, p string) error {
	f, err := parser.ParseFile(m.Fset, p, nil, parser.ParseComments)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(root, filepath.Dir(p))
	if err != nil {
		return err
	}
	pkg := filepath.ToSlash(rel)
	if pkg == "." {
		pkg = ""
	}
	seen := map[string]bool{}
	for _, imp := range m.Graph[pkg] {
		seen[imp] = true
	}
	for _, is := range f.Imports {
		path, err := strconv.Unquote(is.Path.Value)
		if err != nil {
			return fmt.Errorf("%s: bad import %s", p, is.Path.Value)
		}
		if !seen[path] && path != "C" {
			seen[path] = true
			m.Graph[pkg] = append(m.Graph[pkg], path)
		}
	}
	if _, ok := m.Graph[pkg]; !ok {
		m.Graph[pkg] = nil
	}
	if under(pkg, "core") {
		m.Core[pkg] = append(m.Core[pkg], f)
		return nil
	}
	for _, is := range f.Imports {
		if path, _ := strconv.Unquote(is.Path.Value); path == m.Path+"/core" {
			m.Users[pkg] = append(m.Users[pkg], f)
		}
	}
	return nil
}

// Check runs every rule on the module.
func (m *Module) Check() []Violation {
	out := CheckGraph(m.Path, m.Graph)
	for pkg, files := range m.Core {
		for _, f := range files {
			out = append(out, CheckCoreFile(pkg, m.Fset, f)...)
		}
	}
	methods := CoordinatorMethods(m.Core["core"])
	for pkg, files := range m.Users {
		for _, f := range files {
			out = append(out, CheckCoreCalls(pkg, m.Path+"/core", methods, m.Fset, f)...)
		}
	}
	return out
}
