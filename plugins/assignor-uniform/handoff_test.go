package uniform_test

// Hand-off parity: Kafka's coordinator hands a consumer group's members to
// the assignor in the order of its member map (uniform.MemberMap), not in
// member-id order. These vectors give each generated group a history of
// that map (puts and removes in a TimelineHashMap, the running request's
// added members) and hold what Kafka 4.4.0's UniformAssignor answers when
// the GroupSpec is built from it the way TargetAssignmentBuilder does
// (interop/partition-parity, "map" lines). Regenerate with
//
//	go test ./plugins/assignor-uniform -run TestHandOffVectors -update

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/abitest"
	uniform "github.com/coordhost/coordhost/plugins/assignor-uniform"
)

// mapOp is one "map" line: put, remove or add (by the running request).
type mapOp struct{ op, id string }

// handOffCase is a generated group with a member-map history: every member
// joined in a random order (a join puts twice: the member's metadata
// record, then its assignment record), some members left on the way, and
// with addLast the last joiner is the running request's addition.
type handOffCase struct {
	req *abi.PartitionAssignRequest
	ops []mapOp
}

func handOffShapes() []abitest.PartitionShape {
	var out []abitest.PartitionShape
	members := []int{2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 20, 31}
	for i := 0; i < 45; i++ {
		out = append(out, abitest.PartitionShape{
			Members:       members[i%len(members)],
			Topics:        1 + i%3,
			MaxPartitions: []int{3, 7, 13}[(i/3)%3],
			Heterogeneous: i%4 == 3,
			History:       []int{0, 60, 100}[(i/2)%3],
			Seed:          uint64(11000 + i),
		})
	}
	return out
}

func genHandOff(i int, sh abitest.PartitionShape) handOffCase {
	req := abitest.GeneratePartitions(sh)
	rng := rand.New(rand.NewPCG(sh.Seed, 77))
	join := rng.Perm(len(req.Members))
	addLast := i%3 != 2
	var ops []mapOp
	gone := 0
	for k, m := range join {
		id := req.Members[m].ID
		if k == len(join)-1 && addLast {
			ops = append(ops, mapOp{"add", id})
			break
		}
		if rng.IntN(4) == 0 { // someone joins and leaves before this member
			left := fmt.Sprintf("left-%d-%d", i, gone)
			gone++
			ops = append(ops, mapOp{"put", left}, mapOp{"put", left})
			ops = append(ops, mapOp{"put", id}, mapOp{"put", id}, mapOp{"remove", left})
			continue
		}
		ops = append(ops, mapOp{"put", id}, mapOp{"put", id})
	}
	return handOffCase{req: req, ops: ops}
}

// memberMap replays ops as the TimelineHashMap holds them.
func (c handOffCase) memberMap() *uniform.MemberMap {
	seq := map[string]int64{}
	in := map[string]bool{}
	mm := &uniform.MemberMap{}
	for n, o := range c.ops {
		switch o.op {
		case "put":
			if !in[o.id] {
				in[o.id], seq[o.id] = true, int64(n)
			}
			mm.Peak = max(mm.Peak, len(in))
		case "remove":
			delete(in, o.id)
		case "add":
			seq[o.id] = -1
		}
	}
	for _, m := range c.req.Members {
		mm.Seq = append(mm.Seq, seq[m.ID])
	}
	return mm
}

func (c handOffCase) input() string {
	var b strings.Builder
	b.WriteString(formatInput(c.req))
	for _, o := range c.ops {
		fmt.Fprintf(&b, "map %s %s\n", o.op, o.id)
	}
	return b.String()
}

func (c handOffCase) output() string {
	return answer(c.req, func(req *abi.PartitionAssignRequest) (*abi.PartitionAssignResponse, error) {
		return uniform.AssignFrom(req, c.memberMap())
	})
}

// ordered is the request a host sends a plugin: with the member map's
// hand-over order as its MemberOrder.
func (c handOffCase) ordered() *abi.PartitionAssignRequest {
	req := *c.req
	req.MemberOrder = c.memberMap().Order(c.req.Members)
	return &req
}

// answer is a vector's "uniform" section for f's answer to req.
func answer(req *abi.PartitionAssignRequest, f func(*abi.PartitionAssignRequest) (*abi.PartitionAssignResponse, error)) string {
	b := "uniform\n"
	resp, err := f(req)
	if err != nil {
		return b + "error " + javaError(err) + "\n"
	}
	return b + formatMembers(req, resp)
}

// handOffWant is Kafka's answer to hand-off vector i.
func handOffWant(t *testing.T, i int) string {
	t.Helper()
	want, err := os.ReadFile(filepath.Join(vectorDir, handOffName(i)+".out"))
	if err != nil {
		t.Fatal(err)
	}
	return sections(string(want))["uniform"]
}

func handOffName(i int) string { return fmt.Sprintf("handoff%03d", i) }

func TestHandOffVectors(t *testing.T) {
	shapes := handOffShapes()
	if *update {
		inputs := map[string]string{}
		for i, sh := range shapes {
			inputs[handOffName(i)] = genHandOff(i, sh).input()
		}
		writeOutputs(t, inputs)
	}
	differ := 0
	for i, sh := range shapes {
		c := genHandOff(i, sh)
		name := handOffName(i)
		in, err := os.ReadFile(filepath.Join(vectorDir, name+".in"))
		if err != nil {
			t.Fatalf("%v (regenerate with -update)", err)
		}
		if string(in) != c.input() {
			t.Fatalf("%s.in differs from the generator's output: regenerate with -update", name)
		}
		w := handOffWant(t, i)
		got := c.output()
		if sections(got)["uniform"] != w {
			t.Errorf("%s (%s): the Go uniform assignor on the member map differs from Kafka's:\n%s", name, shapeKind(sh), firstDiff(sections(got)["uniform"], w))
		}
		// A plugin sees the member map only as the request's MemberOrder.
		if got := sections(answer(c.ordered(), uniform.Assign))["uniform"]; got != w {
			t.Errorf("%s (%s): the uniform assignor on the request's member order differs from Kafka's:\n%s", name, shapeKind(sh), firstDiff(got, w))
		}
		// The vectors must exercise the hand-off: in some, member-id order
		// gives another answer.
		if plain, err := uniform.Assign(c.req); err == nil && formatMembers(c.req, plain) != sections(got)["uniform"] {
			differ++
		}
	}
	if differ == 0 {
		t.Errorf("no vector's answer depends on the member map's order")
	}
	t.Logf("%d of %d vectors answer differently in member-id order", differ, len(shapes))
}

// TestHandOffLive runs Kafka's assignor now on a subset of the hand-off
// vectors, so that a stale committed output cannot hide a difference.
func TestHandOffLive(t *testing.T) {
	if os.Getenv("CI") != "true" && testing.Short() {
		t.Skip("runs java; CI=true always runs it")
	}
	shapes := handOffShapes()
	dir := t.TempDir()
	var files []string
	cases := map[string]handOffCase{}
	for _, i := range []int{1, 4, 9, 14, 20, 33} {
		c := genHandOff(i, shapes[i])
		path := filepath.Join(dir, handOffName(i)+".in")
		if err := os.WriteFile(path, []byte(c.input()), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, path)
		cases[handOffName(i)+".in"] = c
	}
	outs := runJava(t, files)
	if len(outs) != len(files) {
		t.Fatalf("Kafka answered %d of %d inputs", len(outs), len(files))
	}
	for name, body := range outs {
		if got, want := sections(cases[name].output())["uniform"], sections(body)["uniform"]; got != want {
			t.Errorf("%s: the Go uniform assignor on the member map differs from Kafka's:\n%s", name, firstDiff(got, want))
		}
	}
}
