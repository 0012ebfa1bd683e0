package dst

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The seed count: -seeds, else COORDHOST_DST_SEEDS, else 2000 under CI=true
// (the CI size) and 200 otherwise, so a local `go test ./...` stays fast.
// -seed=N (or COORDHOST_DST_SEED=N) runs one seed and prints its trace.
var (
	flagSeeds = flag.Int("seeds", 0, "number of DST seeds (default: COORDHOST_DST_SEEDS, 2000 under CI=true, else 200)")
	flagSeed  = flag.Int64("seed", -1, "run only this DST seed and print its trace")
	flagFirst = flag.Uint64("first-seed", 0, "first seed of the run")
	flagSteps = flag.Int("steps", 150, "steps per seed")
)

func seedCount(t *testing.T) int {
	if *flagSeeds > 0 {
		return *flagSeeds
	}
	if v := os.Getenv("COORDHOST_DST_SEEDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("COORDHOST_DST_SEEDS=%q: want a positive number", v)
		}
		return n
	}
	if os.Getenv("CI") == "true" {
		return 2000
	}
	return 200
}

func oneSeed() (uint64, bool) {
	if *flagSeed >= 0 {
		return uint64(*flagSeed), true
	}
	if v := os.Getenv("COORDHOST_DST_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		return n, err == nil
	}
	return 0, false
}

// TestDST runs the seeds, spread over GOMAXPROCS goroutines (each seed is
// independent and deterministic), and fails with the lowest failing seed,
// its error and the tail of its trace.
func TestDST(t *testing.T) {
	if seed, ok := oneSeed(); ok {
		res := Run(Options{Seed: seed, Steps: *flagSteps, Trace: true})
		t.Logf("seed %d: %+v\n%s", seed, res.Stats, res.Trace)
		if res.Err != nil {
			t.Fatalf("seed %d: %v", seed, res.Err)
		}
		return
	}
	n := seedCount(t)
	start := time.Now()
	first, total, failed := runSeeds(*flagFirst, n, *flagSteps, nil)
	t.Logf("%d seeds from %d, %d steps each: %d failed, %s; %+v", n, *flagFirst, *flagSteps, len(failed), time.Since(start).Round(time.Millisecond), total)
	if first != nil {
		t.Fatalf("%d of %d seeds failed (%v); first: seed %d (fails within %d steps): %v\nreproduce: go test ./internal/dst -run TestDST -seed=%d -steps=%d -v\ntrace:\n%s",
			len(failed), n, failed, first.seed, first.steps, first.res.Err, first.seed, first.steps, tail(first.res.Trace, 200))
	}
	if n >= 100 && (total.Grants < n || total.FailedAppends < n || total.Fenced == 0 || total.Lost == 0 || total.Crashes < 2*n ||
		total.Conversions < n/10 || total.Pipelined < n/10) {
		t.Fatalf("the run exercised too little: %+v", total)
	}
}

type failedSeed struct {
	seed  uint64
	steps int // the fewest steps with which the seed fails
	res   Result
}

// shortest reruns a failing seed with its trace and with as few steps as
// still make it fail (a run of k steps is the first k steps of a longer
// one, then the final restart), found by bisection: the minimal trace.
func shortest(seed uint64, steps int, setup func(*Options)) (int, Result) {
	run := func(n int) Result {
		o := Options{Seed: seed, Steps: n}
		if setup != nil {
			setup(&o)
		}
		if o.StoreDir != "" {
			o.StoreDir += fmt.Sprintf("-rerun%d", n)
		}
		o.Trace = true
		return Run(o)
	}
	best := run(steps)
	lo, hi := 1, steps
	for lo < hi {
		mid := (lo + hi) / 2
		if r := run(mid); r.Err != nil {
			hi, best = mid, r
		} else {
			lo = mid + 1
		}
	}
	if best.Err == nil { // not reproducible: report the full run
		return steps, run(steps)
	}
	return hi, best
}

// runSeeds runs seeds first..first+n-1 (with setup, when set, adjusting
// each seed's options) and returns the lowest failing one, the summed
// stats and every failing seed.
func runSeeds(first uint64, n, steps int, setup func(*Options)) (*failedSeed, Stats, []uint64) {
	var (
		mu     sync.Mutex
		total  Stats
		fails  []uint64
		lowest *failedSeed
		next   = first
		wg     sync.WaitGroup
	)
	// Seeds spend much of their time handing rounds to the runtime's
	// worker and back: run more of them than there are CPUs.
	for w := 0; w < 4*runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				seed := next
				next++
				mu.Unlock()
				if seed >= first+uint64(n) {
					return
				}
				o := Options{Seed: seed, Steps: steps}
				if setup != nil {
					setup(&o)
				}
				res := Run(o)
				mu.Lock()
				total.add(res.Stats)
				if res.Err != nil {
					fails = append(fails, seed)
					if lowest == nil || seed < lowest.seed {
						lowest = &failedSeed{seed: seed, steps: steps, res: res}
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if lowest != nil {
		lowest.steps, lowest.res = shortest(lowest.seed, steps, setup)
	}
	return lowest, total, fails
}

func (s *Stats) add(o Stats) {
	s.Rounds += o.Rounds
	s.Crashes += o.Crashes
	s.FailedAppends += o.FailedAppends
	s.Fenced += o.Fenced
	s.Released += o.Released
	s.Lost += o.Lost
	s.Grants += o.Grants
	s.Conversions += o.Conversions
	s.Pipelined += o.Pipelined
}

func tail(trace string, lines int) string {
	l := strings.Split(strings.TrimRight(trace, "\n"), "\n")
	if len(l) > lines {
		l = append([]string{fmt.Sprintf("… (%d lines before)", len(l)-lines)}, l[len(l)-lines:]...)
	}
	return strings.Join(l, "\n")
}

// TestDSTDeterministic: a seed run twice gives the same trace — pipeline
// episodes and conversions of the mixed group included.
func TestDSTDeterministic(t *testing.T) {
	var all strings.Builder
	defer func() {
		for _, want := range []string{"appends held", "held append goes on", "converted (online-classic-to-streams)"} {
			if !t.Failed() && !strings.Contains(all.String(), want) {
				t.Errorf("no trace of the seeds shows %q", want)
			}
		}
	}()
	for seed := uint64(0); seed < 5; seed++ {
		a, b := Run(Options{Seed: seed, Trace: true}), Run(Options{Seed: seed, Trace: true})
		if a.Trace != b.Trace || fmt.Sprint(a.Err) != fmt.Sprint(b.Err) {
			t.Fatalf("seed %d: two runs differ (%d and %d bytes of trace)", seed, len(a.Trace), len(b.Trace))
		}
		if strings.Count(a.Trace, "\n") < 200 {
			t.Fatalf("seed %d: trace suspiciously short:\n%s", seed, a.Trace)
		}
		all.WriteString(a.Trace)
	}
}

// storeSeeds is how many seeds run over the bbolt store: each append is
// an fsync, so they cost far more than seeds in memory.
const storeSeeds = 50

// inlineSeeds is TestDSTInline's seed count: the runtime's inline path
// under the same invariants, crashes and failed appends as TestDST.
const inlineSeeds = 200

// TestDSTInline runs seeds with requests submitted inline, as the host
// submits client requests: a round may run on the submitting goroutine,
// its append and commit on the appender, and every invariant still holds.
func TestDSTInline(t *testing.T) {
	setup := func(o *Options) { o.Inline = true }
	first, total, failed := runSeeds(0, inlineSeeds, *flagSteps, setup)
	t.Logf("%d seeds inline: %+v", inlineSeeds, total)
	if first != nil {
		t.Fatalf("%d of %d seeds failed inline (%v); first: seed %d (fails within %d steps): %v\ntrace:\n%s",
			len(failed), inlineSeeds, failed, first.seed, first.steps, first.res.Err, tail(first.res.Trace, 200))
	}
	if total.Crashes < 2*inlineSeeds || total.Grants < inlineSeeds || total.FailedAppends < inlineSeeds || total.Pipelined < inlineSeeds/10 {
		t.Fatalf("the run exercised too little: %+v", total)
	}
}

// TestDSTStore runs seeds over host/store's bbolt store, closed and opened
// again at every crash, instead of the in-memory log.
func TestDSTStore(t *testing.T) {
	dir := t.TempDir()
	setup := func(o *Options) { o.StoreDir = filepath.Join(dir, strconv.FormatUint(o.Seed, 10)) }
	first, total, failed := runSeeds(0, storeSeeds, *flagSteps, setup)
	t.Logf("%d seeds over the store: %+v", storeSeeds, total)
	if first != nil {
		t.Fatalf("%d of %d seeds failed over the store (%v); first: seed %d (fails within %d steps): %v\ntrace:\n%s",
			len(failed), storeSeeds, failed, first.seed, first.steps, first.res.Err, tail(first.res.Trace, 200))
	}
	if total.Crashes < 2*storeSeeds || total.Grants == 0 {
		t.Fatalf("the run exercised too little: %+v", total)
	}
}
