package core

import (
	"sort"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// registeredSet is a PartitionAssignorSet a test changes while the
// coordinator runs.
type registeredSet map[string]PartitionAssignor

func (s registeredSet) PartitionAssignor(name string) (PartitionAssignor, bool) {
	a, ok := s[name]
	return a, ok
}

func (s registeredSet) PartitionAssignorNames() []string {
	out := make([]string, 0, len(s))
	for n := range s {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// firstTakesAll gives every partition to the first member (lowest id).
type firstTakesAll struct{}

func (firstTakesAll) AssignPartitions(in PartitionAssignInput) ([][]AssignedTopic, error) {
	out := make([][]AssignedTopic, len(in.Members))
	for ti, t := range in.Topics {
		ps := make([]int32, t.Partitions)
		for p := range ps {
			ps[p] = int32(p)
		}
		out[0] = append(out[0], AssignedTopic{Topic: int32(ti), Partitions: ps})
	}
	return out, nil
}

// TestConsumerRegisteredAssignor: a name outside Assignors is
// UNSUPPORTED_ASSIGNOR until the registered set has it, then members naming
// it get its targets, while a group naming none keeps the default.
func TestConsumerRegisteredAssignor(t *testing.T) {
	set := registeredSet{}
	cfg := consumerTestConfig()
	cfg.Consumer.Registered = set
	h := newCHarness(t, cfg)
	mine := "mine"
	req := joinReq("g", "m1", "a")
	req.ServerAssignor = &mine
	resp := h.hb(req)
	if resp.ErrorCode != kerr.UnsupportedAssignor.Code || !strings.Contains(*resp.ErrorMessage, "uniform, range.") {
		t.Fatalf("before registration: %v %v", kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
	}

	set["mine"] = firstTakesAll{}
	for _, m := range []string{"m1", "m2"} {
		req := joinReq("g", m, "a")
		req.ServerAssignor = &mine
		if resp := h.hb(req); resp.ErrorCode != 0 {
			t.Fatalf("join %s: %v", m, kerr.ErrorForCode(resp.ErrorCode))
		}
	}
	g := h.group("g")
	if got := h.c.preferredConsumerAssignor(g).Name; got != "mine" {
		t.Fatalf("group assignor %q, want mine", got)
	}
	if n1, n2 := len(g.target["m1"]), len(g.target["m2"]); n1 != 4 || n2 != 0 {
		t.Fatalf("targets: m1 %v, m2 %v; want all of a with m1", g.target["m1"], g.target["m2"])
	}
	for _, m := range []string{"o1", "o2"} {
		if resp := h.hb(joinReq("o", m, "a")); resp.ErrorCode != 0 {
			t.Fatalf("join %s: %v", m, kerr.ErrorForCode(resp.ErrorCode))
		}
	}
	o := h.group("o")
	if got := h.c.preferredConsumerAssignor(o).Name; got != "uniform" || len(o.target["o2"]) != 2 {
		t.Fatalf("default group: assignor %q, o2 target %v", got, o.target["o2"])
	}

	// Unregistered: the group's members still name it, but it no longer
	// counts, and a joining member naming it is refused.
	delete(set, "mine")
	if got := h.c.preferredConsumerAssignor(g).Name; got != "uniform" {
		t.Fatalf("after unregistering: %q, want uniform", got)
	}
	req = joinReq("g", "m3", "a")
	req.ServerAssignor = &mine
	if resp := h.hb(req); resp.ErrorCode != kerr.UnsupportedAssignor.Code {
		t.Fatalf("after unregistering: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	h.checkReplay()
}
