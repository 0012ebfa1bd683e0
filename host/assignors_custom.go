package host

import (
	"fmt"
	"sort"
)

// addNative registers in-process assignors beside the built-in ones. Each
// is its own fallback: a run that fails or returns an invalid assignment
// is an error, as for a built-in assignor's native build. A name already
// registered is refused.
func (a *Assignors) addNative(custom map[string]NativeAssignor) error {
	names := make([]string, 0, len(custom))
	for n := range custom {
		names = append(names, n)
	}
	sort.Strings(names)
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, name := range names {
		fn := custom[name]
		switch {
		case name == "":
			return fmt.Errorf("in-process assignor: empty name")
		case fn == nil:
			return fmt.Errorf("in-process assignor %q: nil function", name)
		case a.byName[name] != nil:
			return fmt.Errorf("in-process assignor %q: the name is taken by a built-in assignor", name)
		}
		a.byName[name] = &assignor{name: name, native: fn, fallback: name}
		a.log.Info("in-process assignor registered", "assignor", name)
	}
	return nil
}
