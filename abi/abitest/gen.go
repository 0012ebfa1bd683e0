// Package abitest is the conformance kit for assignor plugins: deterministic
// request generators, the validity and determinism checks of abi/SPEC.md
// sections 6 and 7, and balance and stickiness figures. It runs against
// anything that maps an AssignRequest to an AssignResponse: a native Go
// assignor, or a WebAssembly plugin loaded by host/plugin.
package abitest

import (
	"fmt"
	"math/rand/v2"
	"sort"

	"github.com/coordhost/coordhost/abi"
)

// Shape describes a generated group. Generation is a pure function of the
// shape: the same Shape always gives the same request.
type Shape struct {
	Members       int // members in the group
	Processes     int // processes they are spread over (>= 1, <= Members)
	Subtopologies int
	Partitions    int // partitions per subtopology; the last one gets Partitions/2+1
	StatelessEach int // every StatelessEach-th subtopology is stateless (0: none)
	Standbys      int // num.standby.replicas
	// History: fraction (0..100) of members that held tasks before; the
	// rest are new. 0 gives a fresh group.
	History int
	// Offsets makes every previous holder report task offsets, and some
	// members report offsets for tasks they do not hold (state on disk).
	Offsets bool
	// RandomIDs draws process and member ids from the seed (UUID-like)
	// instead of numbering them, so that hash-based tie-breaking in an
	// assignor meets realistic keys.
	RandomIDs bool
	Seed      uint64
}

// Generate builds the request for s.
func Generate(s Shape) *abi.AssignRequest {
	rng := rand.New(rand.NewPCG(s.Seed, 0x5eed))
	req := &abi.AssignRequest{GroupID: "app-" + fmt.Sprint(s.Seed), GroupEpoch: 7, Seed: s.Seed}
	req.Configs.NumStandbyReplicas = int32(s.Standbys)
	req.Configs.All = []abi.KV{{Key: "num.standby.replicas", Value: fmt.Sprint(s.Standbys)}}
	req.Processes = make([]string, max(s.Processes, 1))
	for i := range req.Processes {
		req.Processes[i] = fmt.Sprintf("p%05d", i)
		if s.RandomIDs {
			req.Processes[i] = fmt.Sprintf("%08x-%04x", rng.Uint32(), rng.Uint32()&0xffff)
		}
	}
	sort.Strings(req.Processes)
	for i := 0; i < s.Subtopologies; i++ {
		parts := s.Partitions
		if i == s.Subtopologies-1 && s.Subtopologies > 1 {
			parts = s.Partitions/2 + 1
		}
		stateless := s.StatelessEach > 0 && i%s.StatelessEach == s.StatelessEach-1
		req.Subtopologies = append(req.Subtopologies, abi.Subtopology{
			ID: fmt.Sprintf("%d", i), Partitions: int32(parts), Stateful: !stateless})
	}
	sort.Slice(req.Subtopologies, func(i, j int) bool { return req.Subtopologies[i].ID < req.Subtopologies[j].ID })
	req.Members = make([]abi.Member, s.Members)
	for i := range req.Members {
		req.Members[i] = abi.Member{ID: fmt.Sprintf("m%05d", i), Process: int32(i % len(req.Processes))}
		if s.RandomIDs {
			req.Members[i].ID = fmt.Sprintf("%08x%08x", rng.Uint32(), rng.Uint32())
		}
	}
	if s.History > 0 {
		addHistory(req, s, rng)
	}
	return req
}

// addHistory gives a random subset of members a previous assignment: a
// round-robin spread of actives over the old members, standbys on other
// processes, and offsets when asked.
func addHistory(req *abi.AssignRequest, s Shape, rng *rand.Rand) {
	var old []int
	for i := range req.Members {
		if rng.IntN(100) < s.History {
			old = append(old, i)
		}
	}
	if len(old) == 0 {
		return
	}
	space := abi.NewTaskSpace(req.Subtopologies)
	stateful := make([]bool, space.Total())
	for si, sub := range req.Subtopologies {
		for p := int32(0); p < sub.Partitions; p++ {
			stateful[space.Task(int32(si), p)] = sub.Stateful
		}
	}
	start := rng.IntN(len(old))
	for t := int32(0); t < space.Total(); t++ {
		if rng.IntN(10) == 0 { // some tasks have no previous owner
			continue
		}
		mi := old[(start+int(t))%len(old)]
		m := &req.Members[mi]
		m.Active = append(m.Active, t)
		if s.Offsets && stateful[t] {
			m.TaskOffsets = append(m.TaskOffsets, abi.TaskOffset{Task: t, Offset: int64(rng.IntN(1000))})
		}
		if !stateful[t] {
			continue
		}
		for r := 1; r <= s.Standbys; r++ {
			sm := &req.Members[old[(start+int(t)+r*(len(old)/(s.Standbys+1)+1))%len(old)]]
			if sm.Process == m.Process || contains(sm.Active, t) || contains(sm.Standby, t) {
				continue
			}
			sm.Standby = append(sm.Standby, t)
			if s.Offsets {
				sm.TaskOffsets = append(sm.TaskOffsets, abi.TaskOffset{Task: t, Offset: int64(rng.IntN(1000))})
			}
		}
		if s.Offsets && rng.IntN(8) == 0 { // state on disk of a restarted member
			om := &req.Members[rng.IntN(len(req.Members))]
			if !contains(om.Active, t) && !contains(om.Standby, t) && !hasOffset(om.TaskOffsets, t) {
				om.TaskOffsets = append(om.TaskOffsets, abi.TaskOffset{Task: t, Offset: int64(rng.IntN(1000))})
			}
		}
	}
	for i := range req.Members {
		normalize(&req.Members[i])
	}
}

func contains(set []int32, t int32) bool {
	for _, x := range set {
		if x == t {
			return true
		}
	}
	return false
}

func hasOffset(os []abi.TaskOffset, t int32) bool {
	for _, o := range os {
		if o.Task == t {
			return true
		}
	}
	return false
}

func normalize(m *abi.Member) {
	for _, set := range [][]int32{m.Active, m.Standby, m.Warmup} {
		sort.Slice(set, func(i, j int) bool { return set[i] < set[j] })
	}
	sort.Slice(m.TaskOffsets, func(i, j int) bool { return m.TaskOffsets[i].Task < m.TaskOffsets[j].Task })
}

// Case is one named request of the conformance suite.
type Case struct {
	Name string
	Req  *abi.AssignRequest
}

// Cases returns the standard conformance suite: small and edge-case groups,
// sticky histories, standbys, stateless subtopologies, and one group of 100
// members x 1,000 tasks. With short set, the large case is left out.
func Cases(short bool) []Case {
	shapes := []struct {
		name string
		s    Shape
	}{
		{"one-member", Shape{Members: 1, Processes: 1, Subtopologies: 1, Partitions: 4, Seed: 1}},
		{"more-members-than-tasks", Shape{Members: 6, Processes: 3, Subtopologies: 1, Partitions: 2, Seed: 2}},
		{"fresh-3x2", Shape{Members: 3, Processes: 2, Subtopologies: 2, Partitions: 6, Seed: 3}},
		{"standby-needs-other-process", Shape{Members: 4, Processes: 2, Subtopologies: 2, Partitions: 5, Standbys: 1, Seed: 4}},
		{"standbys-exceed-processes", Shape{Members: 4, Processes: 2, Subtopologies: 1, Partitions: 4, Standbys: 3, Seed: 5}},
		{"stateless-mix", Shape{Members: 7, Processes: 4, Subtopologies: 5, Partitions: 7, StatelessEach: 2, Standbys: 1, Seed: 6}},
		{"sticky-history", Shape{Members: 12, Processes: 6, Subtopologies: 3, Partitions: 16, Standbys: 1, History: 70, Seed: 7}},
		{"history-with-offsets", Shape{Members: 20, Processes: 8, Subtopologies: 4, Partitions: 12, StatelessEach: 3, Standbys: 2, History: 80, Offsets: true, Seed: 8}},
		{"empty-subtopology", Shape{Members: 3, Processes: 3, Subtopologies: 2, Partitions: 0, Seed: 9}},
	}
	if !short {
		shapes = append(shapes, struct {
			name string
			s    Shape
		}{"100x1000", Shape{Members: 100, Processes: 50, Subtopologies: 10, Partitions: 111, StatelessEach: 5, Standbys: 1, History: 90, Offsets: true, Seed: 10}})
	}
	out := make([]Case, len(shapes))
	for i, sh := range shapes {
		out[i] = Case{Name: sh.name, Req: Generate(sh.s)}
	}
	return out
}

// largestShape is the largest group the kit checks: 1,000 members on 1,000
// processes, 10,004 stateful tasks (10 subtopologies), 2 standby replicas,
// 90 % of members with a previous assignment and reported offsets. A plugin
// must assign it within the default plugin memory limit.
var largestShape = Shape{Members: 1000, Processes: 1000, Subtopologies: 10, Partitions: 1053,
	Standbys: 2, History: 90, Offsets: true, Seed: 14}

// Largest returns the case of the largest group the kit checks
// (largestShape). It is not part of Cases: one call takes seconds as
// WebAssembly, and the checks call it three times.
func Largest() Case {
	return Case{Name: "1000x10004-standbys2", Req: Generate(largestShape)}
}
