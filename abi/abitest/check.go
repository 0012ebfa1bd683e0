package abitest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"

	"github.com/coordhost/coordhost/abi"
)

// AssignFunc is an assignor under test.
type AssignFunc func(req *abi.AssignRequest) (*abi.AssignResponse, error)

// Result is the verdict of one case.
type Result struct {
	Case    string
	Err     error // nil: valid and deterministic
	Figures Figures
}

// Run checks assign on every case: the response must be valid (SPEC.md 6),
// the same on a second call, and unchanged per member when the member list
// is permuted (SPEC.md 7). It measures balance and stickiness figures.
func Run(assign AssignFunc, cases []Case) []Result {
	out := make([]Result, len(cases))
	for i, c := range cases {
		out[i] = runCase(assign, c)
	}
	return out
}

func runCase(assign AssignFunc, c Case) Result {
	res := Result{Case: c.Name}
	first, err := call(assign, c.Req)
	if err != nil {
		res.Err = fmt.Errorf("call: %w", err)
		return res
	}
	if err := abi.ValidateAssignment(c.Req, first); err != nil {
		res.Err = err
		return res
	}
	res.Figures = Measure(c.Req, first)
	again, err := call(assign, c.Req)
	if err != nil {
		res.Err = fmt.Errorf("second call: %w", err)
		return res
	}
	if !reflect.DeepEqual(canon(first), canon(again)) {
		res.Err = errors.New("not deterministic: the same request gave a different response")
		return res
	}
	perm, order := Permute(c.Req, 0x9e3779b9)
	permuted, err := call(assign, perm)
	if err != nil {
		res.Err = fmt.Errorf("permuted call: %w", err)
		return res
	}
	if err := abi.ValidateAssignment(perm, permuted); err != nil {
		res.Err = fmt.Errorf("permuted members: %w", err)
		return res
	}
	for newIdx, oldIdx := range order {
		if !reflect.DeepEqual(canonOne(first.Members[oldIdx]), canonOne(permuted.Members[newIdx])) {
			res.Err = fmt.Errorf("not deterministic: member %q gets a different assignment when members are permuted",
				c.Req.Members[oldIdx].ID)
			return res
		}
	}
	return res
}

// call runs assign and round-trips the response through the codec, so that
// a native assignor is held to what the wire can carry.
func call(assign AssignFunc, req *abi.AssignRequest) (*abi.AssignResponse, error) {
	resp, err := assign(req)
	if err != nil {
		return nil, err
	}
	if resp == nil {
		return nil, errors.New("nil response without an error")
	}
	b, err := abi.AppendAssignResponse(nil, resp)
	if err != nil {
		return nil, err
	}
	var back abi.AssignResponse
	if err := abi.DecodeAssignResponse(b, &back); err != nil {
		return nil, err
	}
	return &back, nil
}

// Permute returns a copy of req with its members shuffled by seed, and
// order, where order[i] is the original index of the new member i.
func Permute(req *abi.AssignRequest, seed uint64) (*abi.AssignRequest, []int) {
	rng := rand.New(rand.NewPCG(seed, seed))
	order := rng.Perm(len(req.Members))
	cp := *req
	cp.Members = make([]abi.Member, len(req.Members))
	for i, o := range order {
		cp.Members[i] = req.Members[o]
	}
	return &cp, order
}

func canon(r *abi.AssignResponse) []abi.MemberAssignment {
	out := make([]abi.MemberAssignment, len(r.Members))
	for i, m := range r.Members {
		out[i] = canonOne(m)
	}
	return out
}

// canonOne treats nil and empty task sets alike.
func canonOne(m abi.MemberAssignment) abi.MemberAssignment {
	nz := func(s []int32) []int32 {
		if len(s) == 0 {
			return nil
		}
		return s
	}
	return abi.MemberAssignment{Active: nz(m.Active), Standby: nz(m.Standby), Warmup: nz(m.Warmup)}
}

// Failed returns the results that carry an error.
func Failed(rs []Result) []Result {
	var out []Result
	for _, r := range rs {
		if r.Err != nil {
			out = append(out, r)
		}
	}
	return out
}
