package abitest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"

	"github.com/coordhost/coordhost/abi"
)

// PartitionShape describes a generated consumer-group partition-assign
// request.
type PartitionShape struct {
	Members       int
	Topics        int
	MaxPartitions int // each topic has 0..MaxPartitions partitions
	Heterogeneous bool
	// Unsubscribed members (heterogeneous only) subscribe to nothing.
	Unsubscribed int
	// History is the percentage of partitions with a current owner.
	History int
	Racks   int // 0: no racks
	Static  int // percentage of members with an instance id
	Seed    uint64
}

// GeneratePartitions builds a request of shape s, deterministically from
// s.Seed: random topic ids, subscriptions, sticky current assignments
// (including partitions of topics the owner no longer subscribes to).
func GeneratePartitions(s PartitionShape) *abi.PartitionAssignRequest {
	rng := rand.New(rand.NewPCG(s.Seed, s.Seed^0x5eed))
	req := &abi.PartitionAssignRequest{GroupID: "g", GroupEpoch: 1, Seed: s.Seed, Heterogeneous: s.Heterogeneous}
	for i := 0; i < s.Racks; i++ {
		req.Racks = append(req.Racks, fmt.Sprintf("rack%d", i))
	}
	for i := 0; i < s.Topics; i++ {
		var t abi.Topic
		for j := range t.ID {
			t.ID[j] = byte(rng.UintN(256))
		}
		t.Partitions = int32(rng.IntN(s.MaxPartitions + 1))
		if s.Racks > 0 {
			for p := int32(0); p < t.Partitions; p++ {
				a, b := int32(rng.IntN(s.Racks)), int32(rng.IntN(s.Racks))
				t.PartitionRacks = append(t.PartitionRacks, uniqSorted([]int32{a, b}))
			}
		}
		req.Topics = append(req.Topics, t)
	}
	slices.SortFunc(req.Topics, func(a, b abi.Topic) int { return slices.Compare(a.ID[:], b.ID[:]) })
	for i := range req.Topics {
		req.Topics[i].Name = fmt.Sprintf("topic-%d", i)
	}
	all := make([]int32, len(req.Topics))
	for i := range all {
		all[i] = int32(i)
	}
	for i := 0; i < s.Members; i++ {
		m := abi.ConsumerMember{ID: fmt.Sprintf("m-%04x", rng.Uint32()&0xffff) + fmt.Sprint(i)}
		if rng.IntN(100) < s.Static {
			m.InstanceID = fmt.Sprintf("i-%d", rng.IntN(1000))
		}
		if s.Racks > 0 {
			m.Rack = req.Racks[rng.IntN(s.Racks)]
		}
		switch {
		case !s.Heterogeneous:
			m.Subscribed = all
		case i < s.Unsubscribed:
		default:
			for _, t := range all {
				if rng.IntN(2) == 0 {
					m.Subscribed = append(m.Subscribed, t)
				}
			}
		}
		req.Members = append(req.Members, m)
	}
	uniqueInstances(req.Members)
	if len(req.Members) > 0 {
		assignHistory(req, rng, s.History)
	}
	return req
}

func uniqSorted(s []int32) []int32 {
	slices.Sort(s)
	return slices.Compact(s)
}

// uniqueInstances drops repeated instance ids (Kafka keeps them unique).
func uniqueInstances(ms []abi.ConsumerMember) {
	seen := map[string]bool{}
	for i := range ms {
		if ms[i].InstanceID != "" && seen[ms[i].InstanceID] {
			ms[i].InstanceID = ""
		}
		seen[ms[i].InstanceID] = true
	}
}

// assignHistory gives history% of the partitions a random current owner,
// mostly among the topic's subscribers.
func assignHistory(req *abi.PartitionAssignRequest, rng *rand.Rand, history int) {
	owned := make([]map[int32][]int32, len(req.Members))
	for t, topic := range req.Topics {
		for p := int32(0); p < topic.Partitions; p++ {
			if rng.IntN(100) >= history {
				continue
			}
			m := rng.IntN(len(req.Members))
			for try := 0; try < 4 && !slices.Contains(req.Members[m].Subscribed, int32(t)); try++ {
				m = rng.IntN(len(req.Members))
			}
			if owned[m] == nil {
				owned[m] = map[int32][]int32{}
			}
			owned[m][int32(t)] = append(owned[m][int32(t)], p)
		}
	}
	for i, byTopic := range owned {
		for t := range req.Topics {
			if ps := byTopic[int32(t)]; len(ps) > 0 {
				req.Members[i].Assigned = append(req.Members[i].Assigned, abi.TopicPartitions{Topic: int32(t), Partitions: ps})
			}
		}
	}
}

// PartitionCase is one named conformance input for a partition assignor.
type PartitionCase struct {
	Name string
	Req  *abi.PartitionAssignRequest
}

// PartitionCases returns the conformance inputs for partition assignors:
// homogeneous and heterogeneous groups, racks, sticky histories, members
// without subscriptions and topics without partitions.
func PartitionCases() []PartitionCase {
	shapes := []struct {
		name string
		s    PartitionShape
	}{
		{"single-member", PartitionShape{Members: 1, Topics: 2, MaxPartitions: 6, Seed: 1}},
		{"homogeneous-fresh", PartitionShape{Members: 5, Topics: 4, MaxPartitions: 12, Seed: 2}},
		{"homogeneous-sticky", PartitionShape{Members: 7, Topics: 5, MaxPartitions: 20, History: 80, Static: 50, Seed: 3}},
		{"homogeneous-racks", PartitionShape{Members: 6, Topics: 3, MaxPartitions: 9, History: 50, Racks: 3, Seed: 4}},
		{"more-members-than-partitions", PartitionShape{Members: 20, Topics: 2, MaxPartitions: 4, History: 60, Seed: 5}},
		{"heterogeneous-fresh", PartitionShape{Members: 6, Topics: 5, MaxPartitions: 10, Heterogeneous: true, Seed: 6}},
		{"heterogeneous-sticky", PartitionShape{Members: 9, Topics: 6, MaxPartitions: 16, Heterogeneous: true, History: 90, Unsubscribed: 2, Seed: 7}},
		{"heterogeneous-racks", PartitionShape{Members: 12, Topics: 8, MaxPartitions: 30, Heterogeneous: true, History: 70, Racks: 4, Static: 30, Seed: 8}},
		{"larger", PartitionShape{Members: 60, Topics: 20, MaxPartitions: 50, Heterogeneous: true, History: 85, Unsubscribed: 3, Seed: 9}},
	}
	out := make([]PartitionCase, len(shapes))
	for i, sh := range shapes {
		out[i] = PartitionCase{Name: "partitions/" + sh.name, Req: GeneratePartitions(sh.s)}
	}
	return out
}

// PartitionAssignFunc is a partition assignor under test.
type PartitionAssignFunc func(req *abi.PartitionAssignRequest) (*abi.PartitionAssignResponse, error)

// RunPartitions checks assign on every case as Run does for task
// assignors: valid (SPEC.md 6.1), deterministic, and independent of the
// member order (SPEC.md 7). Figures report balance, stickiness and any
// unassigned partition.
func RunPartitions(assign PartitionAssignFunc, cases []PartitionCase) []Result {
	out := make([]Result, len(cases))
	for i, c := range cases {
		out[i] = runPartitionCase(assign, c)
	}
	return out
}

func runPartitionCase(assign PartitionAssignFunc, c PartitionCase) Result {
	res := Result{Case: c.Name}
	first, err := callPartitions(assign, c.Req)
	if err != nil {
		res.Err = fmt.Errorf("call: %w", err)
		return res
	}
	res.Figures = measurePartitions(c.Req, first)
	again, err := callPartitions(assign, c.Req)
	if err != nil {
		res.Err = fmt.Errorf("second call: %w", err)
		return res
	}
	if !reflect.DeepEqual(first, again) {
		res.Err = errors.New("not deterministic: the same request gave a different response")
		return res
	}
	rng := rand.New(rand.NewPCG(0x9e3779b9, 0x9e3779b9))
	order := rng.Perm(len(c.Req.Members))
	perm := *c.Req
	perm.Members = make([]abi.ConsumerMember, len(order))
	newIdx := make([]int32, len(order))
	for i, o := range order {
		perm.Members[i] = c.Req.Members[o]
		newIdx[o] = int32(i)
	}
	if c.Req.MemberOrder != nil { // the same members in the same hand-over order
		perm.MemberOrder = make([]int32, len(c.Req.MemberOrder))
		for k, o := range c.Req.MemberOrder {
			perm.MemberOrder[k] = newIdx[o]
		}
	}
	permuted, err := callPartitions(assign, &perm)
	if err != nil {
		res.Err = fmt.Errorf("permuted call: %w", err)
		return res
	}
	for newIdx, oldIdx := range order {
		if !reflect.DeepEqual(first.Members[oldIdx], permuted.Members[newIdx]) {
			res.Err = fmt.Errorf("not deterministic: member %q gets a different assignment when members are permuted", c.Req.Members[oldIdx].ID)
			return res
		}
	}
	return res
}

// callPartitions runs assign, round-trips the response through the codec
// and validates it.
func callPartitions(assign PartitionAssignFunc, req *abi.PartitionAssignRequest) (*abi.PartitionAssignResponse, error) {
	resp, err := assign(req)
	if err != nil {
		return nil, err
	}
	if resp == nil {
		return nil, errors.New("nil response without an error")
	}
	b, err := abi.AppendPartitionAssignResponse(nil, resp)
	if err != nil {
		return nil, err
	}
	var back abi.PartitionAssignResponse
	if err := abi.DecodePartitionAssignResponse(b, len(req.Topics), &back); err != nil {
		return nil, err
	}
	if err := abi.ValidatePartitionAssignment(req, &back); err != nil {
		return nil, err
	}
	return &back, nil
}

// measurePartitions fills the Figures of a partition assignment: Tasks
// counts the subscribed partitions, Active* the partitions per member, and
// KeptActive of PrevActive the currently owned partitions that stay with
// their owner.
func measurePartitions(req *abi.PartitionAssignRequest, resp *abi.PartitionAssignResponse) Figures {
	f := Figures{Members: len(req.Members), ActiveMin: -1, TotalMin: -1}
	subscribed := make([]bool, len(req.Topics))
	for _, m := range req.Members {
		for _, t := range m.Subscribed {
			subscribed[t] = true
		}
	}
	for t, ok := range subscribed {
		if ok {
			f.Tasks += int(req.Topics[t].Partitions)
		}
	}
	for i, tps := range resp.Members {
		n := 0
		for _, tp := range tps {
			n += len(tp.Partitions)
			for _, cur := range req.Members[i].Assigned {
				if cur.Topic == tp.Topic {
					f.KeptActive += intersect(cur.Partitions, tp.Partitions)
				}
			}
		}
		for _, cur := range req.Members[i].Assigned {
			f.PrevActive += len(cur.Partitions)
		}
		f.ActiveMin, f.ActiveMax = minMax(f.ActiveMin, f.ActiveMax, n)
		f.TotalMin, f.TotalMax = f.ActiveMin, f.ActiveMax
	}
	return f
}
