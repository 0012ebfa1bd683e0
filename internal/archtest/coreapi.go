package archtest

import (
	"fmt"
	"go/ast"
	"go/token"
	"sort"
	"strconv"
	"strings"
)

// CoreSurface is what the rest of the module may call on a
// *core.Coordinator (core/step.go): Step for every change of state, the
// reads, and the lifecycle of loading, batches and timers (and the
// one setting a host makes before the first Step: who builds assignor
// inputs).
var CoreSurface = map[string]bool{
	"Step": true, "Read": true, "DecideOffsets": true,
	"Group": true, "GroupIDs": true, "Dump": true, "TimerKeys": true,
	"LastAssignorError": true, "StreamsChangelogs": true, "KnownEndOffsets": true,
	"Replay": true, "ReplayBytes": true, "Loaded": true, "Commit": true, "Seal": true,
	"CommitSealed": true, "Rollback": true, "NextDeadline": true, "DeadlineBound": true,
	"DeferAssignorInputs": true,
}

const coreAPIRule = "outside core, a Coordinator is driven through Step, the reads and the lifecycle methods only"

// CoordinatorMethods lists the exported methods core's files declare on
// Coordinator, sorted.
func CoordinatorMethods(files []*ast.File) []string {
	var out []string
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || len(fd.Recv.List) != 1 || !fd.Name.IsExported() {
				continue
			}
			t := fd.Recv.List[0].Type
			if s, ok := t.(*ast.StarExpr); ok {
				t = s.X
			}
			if id, ok := t.(*ast.Ident); ok && id.Name == "Coordinator" {
				out = append(out, fd.Name.Name)
			}
		}
	}
	sort.Strings(out)
	return out
}

// CheckCoreCalls reports, in a file outside core, every use of a method of
// core's Coordinator that is not on CoreSurface (methods lists them all,
// CoordinatorMethods). Without type information it follows the names the
// file declares as *core.Coordinator (parameters, results, struct fields,
// variables and the results of core.New) and flags x.M and y.x.M for such
// a name x.
func CheckCoreCalls(pkg, corePath string, methods []string, fset *token.FileSet, f *ast.File) []Violation {
	banned := map[string]bool{}
	for _, m := range methods {
		if !CoreSurface[m] {
			banned[m] = true
		}
	}
	coreName := ""
	for _, is := range f.Imports {
		if path, _ := strconv.Unquote(is.Path.Value); path == corePath {
			coreName = path[strings.LastIndex(path, "/")+1:]
			if is.Name != nil {
				coreName = is.Name.Name
			}
		}
	}
	if coreName == "" || len(banned) == 0 {
		return nil
	}
	isCore := func(e ast.Expr, name string) bool {
		s, ok := e.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		id, ok := s.X.(*ast.Ident)
		return ok && id.Name == coreName && s.Sel.Name == name
	}
	isCoordinator := func(e ast.Expr) bool {
		s, ok := e.(*ast.StarExpr)
		return ok && isCore(s.X, "Coordinator")
	}
	coords := map[string]bool{} // names declared as *core.Coordinator
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Field:
			if isCoordinator(n.Type) {
				for _, id := range n.Names {
					coords[id.Name] = true
				}
			}
		case *ast.ValueSpec:
			if n.Type != nil && isCoordinator(n.Type) {
				for _, id := range n.Names {
					coords[id.Name] = true
				}
			}
		case *ast.AssignStmt:
			if len(n.Rhs) == 1 {
				if call, ok := n.Rhs[0].(*ast.CallExpr); ok && isCore(call.Fun, "New") {
					if id, ok := n.Lhs[0].(*ast.Ident); ok {
						coords[id.Name] = true
					}
				}
			}
		}
		return true
	})
	var out []Violation
	ast.Inspect(f, func(n ast.Node) bool {
		s, ok := n.(*ast.SelectorExpr)
		if !ok || !banned[s.Sel.Name] {
			return true
		}
		var name string
		switch x := s.X.(type) {
		case *ast.Ident:
			name = x.Name
		case *ast.SelectorExpr:
			name = x.Sel.Name
		}
		if coords[name] {
			p := fset.Position(s.Pos())
			out = append(out, Violation{Pkg: pkg, Pos: fmt.Sprintf("%s:%d", p.Filename, p.Line),
				What: "calls Coordinator." + s.Sel.Name, Rule: coreAPIRule})
		}
		return true
	})
	return out
}
