package loop

import (
	"fmt"
	"sync"
	"time"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host/assign"
)

// AssignorFallback is shown in a group's admin view while its last target
// came from the fallback assignor because the group's plugin failed.
type AssignorFallback struct {
	Assignor string    `json:"assignor"` // the group's configured (plugin) assignor
	Fallback string    `json:"fallback"` // the assignor that answered instead
	Epoch    int32     `json:"epoch"`    // group epoch of that run
	Error    string    `json:"error"`    // why the plugin failed
	At       time.Time `json:"at"`
}

// fallbackLog keeps, per group, the last run the fallback answered; a run
// the plugin answers itself clears it. Soft state, bounded like history.
// The zero value is ready to use.
type fallbackLog struct {
	mu    sync.Mutex
	byGrp map[string]AssignorFallback
}

func (f *fallbackLog) set(group string, v *AssignorFallback) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if v == nil {
		delete(f.byGrp, group)
		return
	}
	if f.byGrp == nil {
		f.byGrp = map[string]AssignorFallback{}
	}
	if _, known := f.byGrp[group]; !known && len(f.byGrp) >= maxHistoryGroups {
		for g := range f.byGrp { // bounded memory under group-id churn
			delete(f.byGrp, g)
			break
		}
	}
	f.byGrp[group] = *v
}

func (f *fallbackLog) get(group string) *AssignorFallback {
	f.mu.Lock()
	defer f.mu.Unlock()
	if v, ok := f.byGrp[group]; ok {
		return &v
	}
	return nil
}

// NoteFallback records how a successful run was answered: by the fallback
// (a warning naming the group, a group event, the admin view's
// assignor_fallback) or by the assignor itself (the field is cleared).
// Called on an assignor worker.
func (l *Loop) NoteFallback(run core.AssignorRun, fb *assign.FellBack) {
	if fb == nil {
		l.fallbacks.set(run.Group, nil)
		return
	}
	l.log.Warn("assignor plugin failed: the group's target comes from the fallback assignor",
		"group", run.Group, "epoch", run.Epoch, "assignor", run.Assignor, "fallback", fb.Fallback, "err", fb.Err)
	l.history.note(run.Group, fmt.Sprintf("assignor %q failed for epoch %d; fallback %q answered: %v", run.Assignor, run.Epoch, fb.Fallback, fb.Err))
	l.fallbacks.set(run.Group, &AssignorFallback{Assignor: run.Assignor, Fallback: fb.Fallback, Epoch: run.Epoch,
		Error: fb.Err.Error(), At: time.Now().UTC()})
}
