package interop

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// loadGen is the running input producer and output verifier (LoadGen.java).
type loadGen struct {
	p       *proc
	regions bool // OrdersApp: a regions output is verified too
}

// loadResult is LoadGen's verdict (its RESULT line).
type loadResult struct {
	In           int64         `json:"in"`
	Out          int64         `json:"out"`
	Wrong        int64         `json:"wrong"`      // outputs whose aggregate is not the one for their input
	Duplicates   int64         `json:"duplicates"` // outputs seen twice for the same input
	Missing      int64         `json:"missing"`    // inputs without an output
	WrongFinal   int64         `json:"wrongFinal"` // keys whose final aggregate is not their last input's
	SendErrors   int64         `json:"sendErrors"`
	Phases       []phaseResult `json:"phases"`
	WrongSamples []string      `json:"wrongSamples"`
	// OrdersApp's regions output (LoadGen's RegionVerifier): updates read,
	// wrong aggregates, repeated and skipped orders.
	RegionOut        int64    `json:"regionOut"`
	RegionWrong      int64    `json:"regionWrong"`
	RegionDuplicates int64    `json:"regionDuplicates"`
	RegionMissing    int64    `json:"regionMissing"`
	RegionSamples    []string `json:"regionSamples"`
	regionChecked    bool     // the run had a regions output
}

// verdict is the wrong-aggregates cell of the results table.
func (r loadResult) verdict() string {
	v := fmt.Sprintf("%d (dup %d, missing %d, bad final %d)", r.Wrong, r.Duplicates, r.Missing, r.WrongFinal)
	if r.regionChecked {
		v += fmt.Sprintf("; regions %d (dup %d, missing %d)", r.RegionWrong, r.RegionDuplicates, r.RegionMissing)
	}
	return v
}

// phaseResult counts the records produced during one phase of a scenario.
type phaseResult struct {
	Name           string  `json:"name"`
	StartMs        int64   `json:"startMs"`
	In             int64   `json:"in"`
	Out            int64   `json:"out"`
	PartitionGapMs []int64 `json:"partitionGapMs"`
	// LatencyP50Ms, LatencyP99Ms and LatencyMaxMs are the time from a
	// record's produce to its output's read, over the outputs read in
	// the phase (-1: none).
	LatencyP50Ms int64 `json:"latencyP50Ms"`
	LatencyP99Ms int64 `json:"latencyP99Ms"`
	LatencyMaxMs int64 `json:"latencyMaxMs"`
	// WorstProducedMs and WorstKey name, per partition, the record whose
	// gap is PartitionGapMs: when it was produced, and its key.
	WorstProducedMs []int64  `json:"worstProducedMs"`
	WorstKey        []string `json:"worstKey"`
}

// worst describes where the phase's max gap happened, to line it up with
// coordhost's and the instances' logs: "partition 2: 7.98s for k14
// produced at 17:15:39.512".
func (p phaseResult) worst() string {
	best := -1
	for i, g := range p.PartitionGapMs {
		if best < 0 || g > p.PartitionGapMs[best] {
			best = i
		}
	}
	if best < 0 || best >= len(p.WorstProducedMs) || best >= len(p.WorstKey) {
		return "no record"
	}
	return fmt.Sprintf("partition %d: %v for %s produced at %s", best,
		time.Duration(p.PartitionGapMs[best])*time.Millisecond, p.WorstKey[best],
		time.UnixMilli(p.WorstProducedMs[best]).UTC().Format("15:04:05.000"))
}

// maxGap is the phase's processing gap: the largest per-partition gap.
func (p phaseResult) maxGap() time.Duration {
	var m int64
	for _, g := range p.PartitionGapMs {
		m = max(m, g)
	}
	return time.Duration(m) * time.Millisecond
}

// badOutputs is the number of wrong, duplicated or missing outputs.
func (r loadResult) badOutputs() int64 {
	return r.Wrong + r.Duplicates + r.Missing + r.WrongFinal + r.SendErrors +
		r.RegionWrong + r.RegionDuplicates + r.RegionMissing
}

// startLoadGen creates app's topics (for ordersApp also the customers
// table, written first) and starts producing at rate records/s.
func startLoadGen(t *testing.T, logDir, bootstrap string, app appSpec, tp topics, keys, rate int) *loadGen {
	t.Helper()
	args := []string{"bootstrap.servers=" + bootstrap, "input.topic=" + tp.in, "output.topic=" + tp.out,
		fmt.Sprintf("partitions=%d", app.partitions), fmt.Sprintf("keys=%d", keys), fmt.Sprintf("rate=%d", rate), "drain.ms=90000"}
	if app.name == ordersApp.name {
		args = append(args, "customers.topic="+tp.customers, "regions.topic="+tp.regions, fmt.Sprintf("regions=%d", orderRegions))
	}
	p := startJava(t, "loadgen-"+tp.in, logDir, "io.coordhost.interop.streams.LoadGen", args...)
	if _, _, err := p.waitLine("TOPICS ", 0, 2*time.Minute); err != nil {
		t.Fatalf("loadgen: %v\n%s", err, p.tail(40))
	}
	return &loadGen{p: p, regions: app.name == ordersApp.name}
}

// orderRegions is the number of regions OrdersApp's customers are spread over.
const orderRegions = 4

// phase starts a new named phase of the run.
func (g *loadGen) phase(name string) error {
	from := g.p.lineCount()
	if _, err := fmt.Fprintf(g.p.in, "phase %s\n", name); err != nil {
		return err
	}
	_, _, err := g.p.waitLine("PHASE "+name, from, 30*time.Second)
	return err
}

// finish stops producing and waits (bounded) for the verifier's result.
func (g *loadGen) finish() (loadResult, error) {
	var r loadResult
	if _, err := fmt.Fprintln(g.p.in, "stop"); err != nil {
		return r, err
	}
	line, _, err := g.p.waitLine("RESULT ", 0, 2*time.Minute)
	if err != nil {
		return r, err
	}
	err = json.Unmarshal([]byte(strings.TrimPrefix(line, "RESULT ")), &r)
	r.regionChecked = g.regions
	return r, err
}

// caughtUp waits (bounded by d) until fewer than maxLag produced records
// lack their output, so a following phase measures steady state rather than
// a backlog from before it.
func (g *loadGen) caughtUp(maxLag int64, d time.Duration) error {
	deadline := time.Now().Add(d)
	var lag int64 = -1
	for time.Now().Before(deadline) {
		from := g.p.lineCount()
		if _, err := fmt.Fprintln(g.p.in, "lag"); err != nil {
			return err
		}
		line, _, err := g.p.waitLine("LAG ", from, 30*time.Second)
		if err != nil {
			return err
		}
		if lag, err = strconv.ParseInt(strings.TrimPrefix(line, "LAG "), 10, 64); err != nil {
			return fmt.Errorf("loadgen: %q: %v", line, err)
		}
		if lag <= maxLag {
			return nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("output still %d records behind after %v", lag, d)
}
