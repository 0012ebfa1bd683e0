package ha_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/abitest"
	"github.com/coordhost/coordhost/host/plugin"
	"github.com/coordhost/coordhost/host/plugin/plugintest"
	ha "github.com/coordhost/coordhost/plugins/assignor-ha"
)

// cSource is the C build of the plugin (c/ha.c); make plugins builds it to
// build/plugins/assignor-ha-c.wasm.
const cSource = "plugins/assignor-ha/c/ha.c"

// loadHA loads the C build (c) or the Go build of the plugin through
// host/plugin. Without clang the C build skips the test, or fails it under
// CI=true.
func loadHA(tb testing.TB, c bool, cfg plugin.Config) *plugin.Plugin {
	tb.Helper()
	var wasm []byte
	if c {
		wasm = plugintest.CPlugin(tb, cSource)
		cfg.Name = "assignor-ha-c"
	} else {
		wasm = plugintest.GoPlugin(tb, "plugins/assignor-ha/wasm")
		cfg.Name = "assignor-ha"
	}
	p, err := plugin.Load(context.Background(), wasm, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.Close(context.Background()) })
	return p
}

// pair runs encoded requests through both builds and compares them.
type pair struct{ c, goWasm *plugin.Plugin }

// newPair loads both builds; withGo false loads the C build only (for
// compareNative).
func newPair(tb testing.TB, withGo bool) pair {
	// Failed calls are expected here: keep their warnings out of the log.
	cfg := plugin.Config{NoDeadline: true, PoolSize: 1, Logger: slog.New(slog.DiscardHandler)}
	p := pair{c: loadHA(tb, true, cfg)}
	if withGo {
		p.goWasm = loadHA(tb, false, cfg)
	}
	return p
}

// status is the guest status of a failed call; any other failure (a trap,
// the memory limit, bad output) is returned as an error.
func status(err error) (abi.Status, error) {
	var pe *plugin.Error
	if !errors.As(err, &pe) || pe.Kind != plugin.KindStatus {
		return 0, err
	}
	return pe.Status, nil
}

// compare runs in through both builds and returns why they differ ("" when
// they answer the same bytes, or fail with the same status). A failure of
// the C build that is not a status (a trap) is always a difference.
func (p pair) compare(in []byte) string {
	ctx := context.Background()
	cOut, cErr := p.c.AssignRaw(ctx, in)
	goOut, goErr := p.goWasm.AssignRaw(ctx, in)
	cSt, cTrap := status(cErr)
	if cTrap != nil {
		return fmt.Sprintf("C build failed without a status: %v", cTrap)
	}
	goSt, goTrap := status(goErr)
	switch {
	case goTrap != nil:
		return fmt.Sprintf("Go build failed without a status: %v", goTrap)
	case (cErr == nil) != (goErr == nil) || cSt != goSt:
		return fmt.Sprintf("C build: %v; Go build: %v", cErr, goErr)
	case string(cOut) != string(goOut):
		return fmt.Sprintf("response bytes differ (C %d bytes, Go %d bytes)", len(cOut), len(goOut))
	}
	return ""
}

// compareNative runs in through the C build and returns why it differs
// from the native build ("" when it does not): the Go decoder's rejection
// must be a DECODE_ERROR status, the assignor's error an ASSIGN_ERROR, and
// a response the same bytes. A trap is always a difference. It serves the
// inputs that fail, which discard the instance: re-instantiating the Go
// build for each would dominate the test's time.
func (p pair) compareNative(in []byte) string {
	out, err := p.c.AssignRaw(context.Background(), in)
	st, trap := status(err)
	if trap != nil {
		return fmt.Sprintf("C build failed without a status: %v", trap)
	}
	var req abi.AssignRequest
	if derr := abi.DecodeAssignRequest(in, &req); derr != nil {
		if st != abi.StatusDecodeError {
			return fmt.Sprintf("the Go decoder rejects it (%v), the C build returned %v", derr, err)
		}
		return ""
	}
	want, aerr := ha.Assign(&req)
	if aerr != nil {
		if st != abi.StatusAssignError {
			return fmt.Sprintf("the native build fails (%v), the C build returned %v", aerr, err)
		}
		return ""
	}
	wb, werr := abi.AppendAssignResponse(nil, want)
	switch {
	case werr != nil:
		return fmt.Sprintf("encoding the native response: %v", werr)
	case err != nil:
		return fmt.Sprintf("the native build answers, the C build returned %v", err)
	case string(out) != string(wb):
		return fmt.Sprintf("response bytes differ from native (C %d bytes, native %d bytes)", len(out), len(wb))
	}
	return ""
}

// same compares the two builds on req, and both with the native build.
func (p pair) same(t *testing.T, name string, req *abi.AssignRequest) {
	t.Helper()
	in, err := abi.AppendAssignRequest(nil, req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if d := p.compare(in); d != "" {
		t.Errorf("%s: %s", name, d)
		return
	}
	want, werr := ha.Assign(req)
	got, gerr := p.c.Assign(context.Background(), req)
	if (werr == nil) != (gerr == nil) {
		t.Errorf("%s: native: %v, C build: %v", name, werr, gerr)
	} else if werr == nil && !sameBytes(want, got) {
		t.Errorf("%s: C build differs from native: %s", name, diffResponses(want, got))
	}
}

// sameBytes reports whether two responses encode to the same bytes.
func sameBytes(a, b *abi.AssignResponse) bool {
	ab, errA := abi.AppendAssignResponse(nil, a)
	bb, errB := abi.AppendAssignResponse(nil, b)
	return errA == nil && errB == nil && string(ab) == string(bb)
}

// TestCEqualsGoOnFixedInputs compares the C and Go builds on the
// conformance suite, the committed parity vectors' inputs, the scenario
// groups and every round of the simulated scale-out.
func TestCEqualsGoOnFixedInputs(t *testing.T) {
	p := newPair(t, true)
	for _, c := range haCases(testing.Short()) {
		p.same(t, "conformance "+c.Name, c.Req)
	}
	cases, _ := parityInputs()
	for _, c := range cases {
		p.same(t, "parity "+c.name, c.req)
	}
	for n := 2; n <= 5; n++ {
		for _, acc := range []int64{0, 100, math.MaxInt64} {
			p.same(t, fmt.Sprintf("scale-out %d acceptable %d", n, acc), scaleOutGroup(n, acc))
		}
	}
	for seed := uint64(1); seed <= 20; seed++ {
		p.same(t, fmt.Sprint("lagging ", seed), laggingGroup(seed))
	}
	// The simulated scale-out, round by round, driven by the C build.
	sim, round := scaleOut(), 0
	sim.run(t, func(req *abi.AssignRequest) (*abi.AssignResponse, error) {
		round++
		p.same(t, fmt.Sprint("simulated round ", round), req)
		return p.c.Assign(context.Background(), req)
	}, 8)
	if round != 8 {
		t.Fatalf("%d simulated rounds, want 8", round)
	}
}

// TestCEqualsGoOnLargeGroups compares the builds on the benchmark groups,
// the largest among them 1,000 members × 10,004 tasks × 2 standbys.
func TestCEqualsGoOnLargeGroups(t *testing.T) {
	if testing.Short() {
		t.Skip("one call of the Go build takes seconds as WebAssembly")
	}
	p := newPair(t, true)
	for _, c := range ratioCases() {
		p.same(t, c.Name, c.Req)
	}
}

// randomGroup draws a group from seed: a kit shape (history, offsets,
// stateless subtopologies), then end offsets, warm-up and lag settings,
// client tags with rack-aware tags, and a probing interval, each some of
// the time.
func randomGroup(seed uint64) *abi.AssignRequest { return randomGroupUpTo(seed, 24, 16) }

// randomGroupUpTo is randomGroup with up to maxMembers members and fewer
// than maxParts partitions per subtopology (randomGroup's draws for 24
// and 16).
func randomGroupUpTo(seed uint64, maxMembers, maxParts int) *abi.AssignRequest {
	rng := rand.New(rand.NewPCG(seed, 0xc0de))
	members := 1 + rng.IntN(maxMembers)
	req := abitest.Generate(abitest.Shape{Members: members, Processes: 1 + rng.IntN(members),
		Subtopologies: 1 + rng.IntN(4), Partitions: rng.IntN(maxParts), StatelessEach: rng.IntN(4),
		Standbys: rng.IntN(4), History: rng.IntN(101), Offsets: rng.IntN(2) == 0,
		RandomIDs: rng.IntN(2) == 0, Seed: seed})
	req.Configs.NumWarmupReplicas = int32(rng.IntN(4))
	req.Configs.AcceptableRecoveryLag = []int64{0, 5, 100, 1000, math.MaxInt64}[rng.IntN(5)]
	total := req.NumTasks()
	for i := range req.Members {
		m := &req.Members[i]
		if rng.IntN(3) == 0 {
			for t := int32(0); t < total; t++ {
				switch rng.IntN(4) {
				case 0:
					m.TaskEndOffsets = append(m.TaskEndOffsets, abi.TaskOffset{Task: t, Offset: int64(rng.IntN(2000))})
				case 1:
					m.TaskEndOffsets = append(m.TaskEndOffsets, abi.TaskOffset{Task: t, Offset: math.MaxInt64})
				}
			}
		}
		if rng.IntN(4) > 0 {
			m.ClientTags = []abi.KV{{Key: "cluster", Value: fmt.Sprint("c", m.Process%2)},
				{Key: "zone", Value: fmt.Sprint("z", int(m.Process)%(1+rng.IntN(3)))}}
		}
	}
	switch rng.IntN(4) {
	case 1:
		req.Configs.RackAwareAssignmentTags = []string{"zone"}
	case 2:
		req.Configs.RackAwareAssignmentTags = []string{"cluster", "zone"}
	}
	if rng.IntN(3) == 0 {
		req.Configs.All = append(req.Configs.All, abi.KV{Key: ha.ConfigProbingInterval, Value: fmt.Sprint(1 + rng.IntN(100000))})
	}
	return req
}

// withUUIDs is req with n distinct process ids as Kafka Streams makes
// them (random UUIDs drawn from seed), in string order, which is not their
// order as Java UUIDs: the builds must sort their clients alike.
func withUUIDs(req *abi.AssignRequest, seed uint64) *abi.AssignRequest {
	out := *req
	out.Processes = randomUUIDs(rand.New(rand.NewPCG(seed, 0x0bad)), len(req.Processes))
	return &out
}

func randomUUIDs(rng *rand.Rand, n int) []string {
	seen := map[string]bool{}
	for len(seen) < n {
		seen[fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", rng.Uint32(), rng.IntN(1<<16), rng.IntN(1<<12),
			0x8000|rng.IntN(1<<14), rng.Uint64()&(1<<48-1))] = true
	}
	return slices.Sorted(maps.Keys(seen))
}

// TestCEqualsGoOnRandomGroups compares the builds on seeded random groups,
// each also with UUIDs for process ids, and on the parity generator's
// groups past the committed vectors.
func TestCEqualsGoOnRandomGroups(t *testing.T) {
	p := newPair(t, true)
	n := 400
	if testing.Short() {
		n = 100
	}
	probing, failed := 0, 0 // the groups must reach the movement code and the errors
	for seed := uint64(1); seed <= uint64(n); seed++ {
		req := randomGroup(seed)
		p.same(t, fmt.Sprint("random ", seed), req)
		p.same(t, fmt.Sprint("random ", seed, " with UUIDs"), withUUIDs(req, seed))
		if resp, err := ha.Assign(req); err != nil {
			failed++
		} else if resp.NextProbeMs >= 0 {
			probing++
		}
	}
	if probing < n/20 || failed > n/2 {
		t.Fatalf("of %d random groups %d ask for a probing rebalance and %d fail: the generator misses the movements", n, probing, failed)
	}
	t.Logf("%d random groups, %d with movements, %d failing", n, probing, failed)
	for seed := parityCases + 1; seed <= parityCases+n/2; seed++ {
		p.same(t, fmt.Sprint("parity generator ", seed), genParity(seed).req)
	}
}

// hostileInputs are requests the decoder must reject: a valid request cut
// at every length, with a count or length raised past the bytes left, with
// more tasks than the limit, and with bad config values; each with what
// the Go decoder says of it.
func hostileInputs(t *testing.T) map[string][]byte {
	req := laggingGroup(3)
	good, err := abi.AppendAssignRequest(nil, req)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for n := 0; n < len(good); n++ {
		out[fmt.Sprint("truncated to ", n)] = good[:n]
	}
	out["trailing byte"] = append(append([]byte{}, good...), 0)
	out["kind byte"] = append([]byte{9}, good[1:]...)
	// A count of 2^31-1 (5 bytes) at every byte position: a member,
	// subtopology, process, string or task count claiming far more than
	// the request holds.
	huge := []byte{0xff, 0xff, 0xff, 0xff, 0x07}
	for at := 1; at < len(good); at++ {
		b := append(append(append([]byte{}, good[:at]...), huge...), good[at:]...)
		out[fmt.Sprint("huge count at ", at)] = b
	}
	// More tasks than abi.MaxTasks in two subtopologies of one member.
	big := &abi.AssignRequest{Processes: []string{"p"}, Members: []abi.Member{{ID: "m"}},
		Subtopologies: []abi.Subtopology{{ID: "a", Partitions: abi.MaxTasks}, {ID: "b"}}}
	big.Subtopologies[1].Partitions = 0
	b, err := abi.AppendAssignRequest(nil, big)
	if err != nil {
		t.Fatal(err)
	}
	// The second subtopology ("b", 0 partitions, flags 0) gets 1 partition.
	sub := bytes.Index(b, []byte{1, 'b', 0, 0})
	if sub < 0 {
		t.Fatalf("no subtopology b in % x", b)
	}
	b[sub+2] = 1
	out["tasks over the limit"] = b
	for _, v := range []string{"0", "-5", "x", "", "+", "99999999999999999999"} {
		bad := randomGroup(7)
		bad.Configs.All = append(bad.Configs.All, abi.KV{Key: ha.ConfigProbingInterval, Value: v})
		b, err := abi.AppendAssignRequest(nil, bad)
		if err != nil {
			t.Fatal(err)
		}
		out[fmt.Sprintf("probing interval %q", v)] = b
	}
	neg := randomGroup(8)
	neg.Configs.AcceptableRecoveryLag = -1
	if b, err = abi.AppendAssignRequest(nil, neg); err != nil {
		t.Fatal(err)
	}
	out["negative acceptable lag"] = b
	return out
}

// TestCHostileInputs: every hostile input ends in the status the native
// build implies (a decode or assign error), never a trap.
func TestCHostileInputs(t *testing.T) {
	p := newPair(t, false)
	statuses := map[abi.Status]int{}
	for name, in := range hostileInputs(t) {
		if d := p.compareNative(in); d != "" {
			t.Errorf("%s: %s", name, d)
			continue
		}
		_, err := p.c.AssignRaw(context.Background(), in)
		st, _ := status(err)
		statuses[st]++
	}
	if statuses[abi.StatusDecodeError] < 100 || statuses[abi.StatusAssignError] < 7 {
		t.Fatalf("statuses %v: want the truncations and counts as decode errors, the configs as assign errors", statuses)
	}
}

// FuzzCAssign feeds any bytes to the C build (through host/plugin): it
// must end in a status or a response, never a trap, and answer exactly
// what the native build answers (which the Go build answers too).
func FuzzCAssign(f *testing.F) {
	for _, c := range haCases(true) {
		b, err := abi.AppendAssignRequest(nil, c.Req)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	p := newPair(f, false)
	f.Fuzz(func(t *testing.T, b []byte) {
		var req abi.AssignRequest
		if abi.DecodeAssignRequest(b, &req) == nil && (req.NumTasks() > 4096 || len(req.Members) > 256) {
			return // a valid group too large for a fuzz iteration
		}
		if d := p.compareNative(b); d != "" {
			t.Fatal(d)
		}
	})
}
