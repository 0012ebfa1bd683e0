package main

import (
	"context"
	"runtime"
	"runtime/metrics"
	"strings"
	"time"
)

// The serving process runs its goroutines on one P (GOMAXPROCS=1) while
// it is mostly idle and on Go's default number of Ps once it is busy
// (runtime.procs=0, opt-in; docs/RATIONALE.md, "Why is one P while idle
// not the default?"). A request arriving at an idle process
// wakes the thread blocked in the poller; with more than one P, every
// further goroutine that becomes runnable meanwhile (another connection's
// request arriving in the same instant) wakes a second thread for an idle
// P, which spins looking for work and sleeps again: a thread wake-up and
// park, each a system call and a context switch, for tens of
// microseconds of work that one thread would have run right after its
// first. On one P those goroutines wait for the running one instead.
// Once the process uses half a core, or a goroutine waited a millisecond
// for the P (a burst, or a long computation such as an assignor run
// holding it: Go preempts one only after 10 ms), a second P pays for
// itself, and the governor gives the process every P until it has been
// quiet again for a second.
const (
	// procsWindow is how often the governor looks at the process's CPU.
	procsWindow = 100 * time.Millisecond
	// procsRaiseBusy: on one P, a window in which the process used at
	// least this share of one core (its goroutines queue behind each
	// other from there on) gives it every P.
	procsRaiseBusy = 0.5
	// procsRaiseWait: on one P, a window in which a goroutine waited this
	// long to run (the runtime samples the waits) gives it every P too.
	procsRaiseWait = time.Millisecond
	// procsLowerBusy and procsQuietWindows: with every P, procsQuietWindows
	// windows in a row below this share of one core put the process back
	// on one P. The gap to procsRaiseBusy keeps it from flapping: the
	// same work costs no more CPU on one P than on several.
	procsLowerBusy    = 0.25
	procsQuietWindows = 10
)

// procsGovernor decides, window by window, how many Ps the process runs
// on: 1, or max.
type procsGovernor struct {
	max   int
	cur   int
	quiet int // windows in a row below procsLowerBusy with every P
}

// next returns the Ps of the next window, given the CPU the process used
// in the last one as a share of one core, and whether a goroutine waited
// procsRaiseWait or longer to run in it.
func (g *procsGovernor) next(busy float64, waited bool) int {
	switch {
	case g.cur < g.max && (busy >= procsRaiseBusy || waited):
		g.cur, g.quiet = g.max, 0
	case g.cur > 1 && busy < procsLowerBusy:
		if g.quiet++; g.quiet >= procsQuietWindows {
			g.cur, g.quiet = 1, 0
		}
	default:
		g.quiet = 0
	}
	return g.cur
}

// governProcs applies runtime.procs: n > 0 sets GOMAXPROCS to n; n < 0
// leaves the runtime's default; 0 runs
// the governor until ctx ends, starting with every P (the start's replay
// is over, but a busy server must not wait a window for its cores), and
// then gives the runtime its default back. A GOMAXPROCS in the
// environment is the operator's setting and is left alone, as is a
// process that has one P anyway.
func governProcs(ctx context.Context, n int, environ []string) {
	for _, kv := range environ {
		if strings.HasPrefix(kv, "GOMAXPROCS=") {
			return
		}
	}
	switch {
	case n > 0:
		runtime.GOMAXPROCS(n)
		return
	case n < 0:
		return
	}
	max := runtime.GOMAXPROCS(0)
	if _, ok := processCPU(); max <= 1 || !ok {
		return
	}
	go func() {
		g := &procsGovernor{max: max, cur: max}
		t := time.NewTicker(procsWindow)
		defer t.Stop()
		last, lastCPU, waits := time.Now(), mustCPU(), newRunWaits()
		for {
			select {
			case <-ctx.Done():
				runtime.SetDefaultGOMAXPROCS()
				return
			case now := <-t.C:
				cpu := mustCPU()
				g.apply(float64(cpu-lastCPU)/float64(now.Sub(last)), waits.since())
				last, lastCPU = now, cpu
			}
		}
	}()
}

// apply sets GOMAXPROCS for the next window (next), given the last
// one's CPU as a share of one core and whether a goroutine waited long.
func (g *procsGovernor) apply(busy float64, waited bool) {
	want := g.next(busy, waited)
	switch {
	case want == runtime.GOMAXPROCS(0):
	case want == 1:
		runtime.GOMAXPROCS(1)
	default:
		// Back to the runtime's default, which follows the CPUs and the
		// CPU limit the process is given.
		runtime.SetDefaultGOMAXPROCS()
		g.max = runtime.GOMAXPROCS(0)
		g.cur = g.max
	}
}

// mustCPU is processCPU where it was read once already.
func mustCPU() time.Duration {
	cpu, _ := processCPU()
	return cpu
}

// runWaits counts the goroutines the runtime saw wait procsRaiseWait or
// longer to run (runtime/metrics' /sched/latencies).
type runWaits struct {
	sample []metrics.Sample
	long   uint64 // the count at the last look
}

func newRunWaits() *runWaits {
	w := &runWaits{sample: []metrics.Sample{{Name: "/sched/latencies:seconds"}}}
	w.since()
	return w
}

// since reports whether a goroutine waited long since the last look.
func (w *runWaits) since() bool {
	metrics.Read(w.sample)
	if w.sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return false
	}
	h := w.sample[0].Value.Float64Histogram()
	var long uint64
	for i, n := range h.Counts {
		if h.Buckets[i] >= procsRaiseWait.Seconds() { // the bucket's lower bound
			long += n
		}
	}
	prev := w.long
	w.long = long
	return long > prev
}
