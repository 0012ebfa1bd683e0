// Package archtest enforces coordhost's import rules and core's purity rules
// (docs/ARCHITECTURE.md) so that a violation fails the build's tests.
package archtest

import (
	"fmt"
	"go/ast"
	"go/token"
	"sort"
	"strconv"
	"strings"
)

// Violation is one broken rule: an import a package may not make, or a call
// or statement that core may not contain.
type Violation struct {
	Pkg  string // package path relative to the module root, e.g. "core"
	Pos  string // file:line, when the violation was found in source
	What string // the offending import path, call or statement
	Rule string // the rule it breaks
}

func (v Violation) String() string {
	where := v.Pkg
	if v.Pos != "" {
		where = v.Pos
	}
	return fmt.Sprintf("%s: %s (%s)", where, v.What, v.Rule)
}

const (
	wazero = "github.com/tetratelabs/wazero"
	kmsg   = "github.com/twmb/franz-go/pkg/kmsg"
	kerr   = "github.com/twmb/franz-go/pkg/kerr"
)

// coreBannedStd lists standard-library trees core may not import: it does no
// I/O, no synchronisation and nothing unsafe, and its hashing is stable.
var coreBannedStd = []string{"net", "os", "sync", "unsafe", "hash/maphash"}

// Graph maps a package path relative to the module root ("core",
// "host/plugin", "plugins/assignor-sticky/wasm") to the import paths of its
// non-test files.
type Graph map[string][]string

// CheckGraph reports every import in g that the import rules forbid. module
// is the module path, used to tell the module's own packages from others.
func CheckGraph(module string, g Graph) []Violation {
	var out []Violation
	pkgs := make([]string, 0, len(g))
	for p := range g {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, pkg := range pkgs {
		for _, imp := range g[pkg] {
			if rule := forbidden(module, pkg, imp); rule != "" {
				out = append(out, Violation{Pkg: pkg, What: "imports " + strconv.Quote(imp), Rule: rule})
			}
		}
	}
	return out
}

// forbidden returns the rule that pkg importing imp breaks, or "".
func forbidden(module, pkg, imp string) string {
	local, own := strings.CutPrefix(imp, module+"/")
	if imp == module {
		local, own = "", true
	}
	std := !own && isStd(imp)
	switch top := firstElem(pkg); {
	case top == "cmd" || top == "internal" || top == "interop":
		return ""
	case pkg == "":
		if std || own && under(local, "host", "abi") {
			return ""
		}
		return "the embedding API (the module's root package) may import only host/*, abi and the standard library"
	case under(pkg, "core/records"):
		switch {
		case std && under(imp, coreBannedStd...):
			return "core does no I/O, synchronisation or unsafe work"
		case std, own && under(local, "core/records"):
			return ""
		}
		return "core/records may import only the standard library: the record codec knows nothing of core, host or Kafka clients"
	case top == "core":
		switch {
		case std && under(imp, coreBannedStd...):
			return "core does no I/O, synchronisation or unsafe work"
		case std, own && under(local, "core"), imp == kmsg, imp == kerr:
			return ""
		}
		return "core may import only the standard library, kmsg and kerr"
	case under(pkg, "abi/metrics"):
		if std && !under(imp, coreBannedStd...) || own && (local == "abi" || under(local, "abi/metrics")) {
			return ""
		}
		return "abi/metrics may import only abi and the standard library, and does no I/O"
	case top == "abi":
		if std || own && under(local, "abi") {
			return ""
		}
		return "abi may import only the standard library"
	case under(pkg, "host/plugin"):
		if std || own && (under(local, "abi") || under(local, "host/plugin")) || under(imp, wazero) {
			return ""
		}
		if isHarness(pkg) && own && local == "internal/testtool" {
			return "" // a test harness package skips or fails on a missing tool as every test does
		}
		return "host/plugin may import only abi and wazero, never core"
	case under(pkg, "host/runtime"):
		if std {
			return ""
		}
		return "host/runtime may import only the standard library: it knows coordinators and record logs through its own interfaces, no Kafka messages"
	case under(pkg, "host/offsets"):
		if std || imp == kmsg || imp == kerr || own && (under(local, "host/offsets") || local == "host/wire") {
			return ""
		}
		return "host/offsets gates offset requests in front of the data plane through its own Plane interface: no core, no gateway, no event loop"
	case under(pkg, "host/assign"):
		if std || own && (under(local, "core", "abi", "host/assign", "host/plugin", "host/shadowproc") || isPluginAlgo(local)) {
			return ""
		}
		return "host/assign runs assignors for the loop through its own API: core, abi, host/plugin, host/shadowproc and plugin algorithm packages, never the host root or Kafka messages"
	case under(pkg, "host/experiment"):
		if std || own && (under(local, "core", "abi", "host/experiment") || local == "host/assign" || local == "host/plugin" ||
			local == "host/shadowproc" || local == "host/config" || local == "host/admin") {
			return ""
		}
		return "host/experiment runs shadows and keeps the history through its own API: core, abi, host/assign, host/plugin, host/shadowproc, host/config and host/admin, never the host root, the store, the data plane or Kafka messages"
	case under(pkg, "host/identity"):
		if std || imp == kmsg || imp == kerr || under(imp, "github.com/twmb/franz-go/pkg/sasl") ||
			own && (under(local, "host/identity") || local == "host/wire" || local == "host/offsets" || local == "host/gateway" || local == "host/authz" || local == "host/config") {
			return ""
		}
		return "host/identity decides whose identity writes offsets over host/gateway, host/authz, host/offsets and host/wire: no core, no event loop"
	case under(pkg, "host/groupconfig"):
		if std || imp == kmsg || imp == kerr || own && (under(local, "host/groupconfig") || local == "host/config") {
			return ""
		}
		return "host/groupconfig holds Kafka's group-config request rules over host/config's key table: no core, no store, no event loop"
	case under(pkg, "host/authz"):
		if std || imp == kmsg || imp == kerr || own && (under(local, "host/authz") || local == "host/wire") {
			return ""
		}
		return "host/authz asks the cluster through host/wire only: no core, no gateway, no copy of coordinator state"
	case under(pkg, "host/loop"):
		if std || imp == kmsg || imp == kerr || own && (under(local, "core") || under(local, "host") && local != "host") {
			return ""
		}
		return "host/loop runs the event loop over core and host/* packages: never the host root (which composes it), and assignors and plugins only through host/assign"
	case top == "host":
		if own && under(local, "host/loop") && pkg != "host" {
			return "only the host root composes the event loop: no other host package imports host/loop"
		}
		if !own || under(local, "core", "abi", "host", "internal") || isPluginAlgo(local) {
			return ""
		}
		return "host may import core, abi, host/* and plugin algorithm packages"
	case top == "plugins":
		name := pluginName(pkg)
		if strings.HasPrefix(pkg, "plugins/"+name+"/wasm") {
			if std || own && (under(local, "abi") || under(local, "plugins/"+name) && !isWasmPkg(local)) {
				return ""
			}
			return "a plugin's wasm package may import only abi, abi/guest and its algorithm package"
		}
		if std || own && (local == "abi" || under(local, "plugins/"+name) && !isWasmPkg(local)) {
			return ""
		}
		return "a plugin algorithm package may import only abi"
	default:
		return "package outside the layout of docs/ARCHITECTURE.md"
	}
}

// isHarness reports whether pkg is a test harness package (its name ends
// in "test", like plugintest): code tests import, never production code.
func isHarness(pkg string) bool { return strings.HasSuffix(pkg, "test") }

func isStd(imp string) bool { return !strings.Contains(firstElem(imp), ".") }

func firstElem(p string) string {
	first, _, _ := strings.Cut(p, "/")
	return first
}

// under reports whether path p is one of roots or inside one of them.
func under(p string, roots ...string) bool {
	for _, r := range roots {
		if p == r || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}

func pluginName(p string) string {
	parts := strings.Split(p, "/")
	if len(parts) < 2 {
		return ""
	}
	return parts[1]
}

func isWasmPkg(local string) bool {
	parts := strings.Split(local, "/")
	return len(parts) >= 3 && parts[0] == "plugins" && parts[2] == "wasm"
}

func isPluginAlgo(local string) bool { return under(local, "plugins") && !isWasmPkg(local) }

// timeBanned are the time functions that read the clock or sleep.
var timeBanned = map[string]bool{
	"Now": true, "Since": true, "Until": true, "After": true, "AfterFunc": true,
	"Tick": true, "NewTimer": true, "NewTicker": true, "Sleep": true,
}

// randAllowed are the math/rand names that do not touch the shared,
// unseeded package-level source: constructors and types.
var randAllowed = map[string]bool{
	"New": true, "NewSource": true, "NewPCG": true, "NewChaCha8": true, "NewZipf": true,
	"Rand": true, "Source": true, "Source64": true, "PCG": true, "ChaCha8": true, "Zipf": true,
}

// CheckCoreFile reports what a non-test core source file may not contain: go
// statements, clock reads and sleeps, package-level math/rand and
// hash/maphash.
func CheckCoreFile(pkg string, fset *token.FileSet, f *ast.File) []Violation {
	var out []Violation
	report := func(n ast.Node, what, rule string) {
		p := fset.Position(n.Pos())
		out = append(out, Violation{Pkg: pkg, Pos: fmt.Sprintf("%s:%d", p.Filename, p.Line), What: what, Rule: rule})
	}
	names := map[string]string{} // local name -> import path
	for _, is := range f.Imports {
		path, _ := strconv.Unquote(is.Path.Value)
		name := path[strings.LastIndex(path, "/")+1:]
		if path == "math/rand/v2" {
			name = "rand"
		}
		if is.Name != nil {
			name = is.Name.Name
		}
		switch {
		case path == "hash/maphash":
			report(is, "imports \"hash/maphash\"", "core hashes must be stable across runs")
		case name == "." && (path == "time" || strings.HasPrefix(path, "math/rand")):
			report(is, "dot-imports "+strconv.Quote(path), "core may not hide clock or randomness calls")
		}
		names[name] = path
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			report(n, "go statement", "core starts no goroutines")
		case *ast.SelectorExpr:
			id, ok := n.X.(*ast.Ident)
			if !ok {
				return true
			}
			switch path := names[id.Name]; {
			case path == "time" && timeBanned[n.Sel.Name]:
				report(n, "time."+n.Sel.Name, "core takes now as an input and never sleeps")
			case (path == "math/rand" || path == "math/rand/v2") && !randAllowed[n.Sel.Name]:
				report(n, "rand."+n.Sel.Name, "core uses only explicitly seeded randomness")
			}
		}
		return true
	})
	return out
}
