package ha_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/abitest"
	ha "github.com/coordhost/coordhost/plugins/assignor-ha"
)

var updateDigests = flag.Bool("update-digests", false, "rewrite testdata/assignments.sha256 from the current code")

const digestFile = "testdata/assignments.sha256"

// digestCases are the groups whose assignments are pinned by digest: the
// conformance suite, the benchmark groups, the parity generator's and the
// C comparison's random groups, lagging scale-outs, random groups of up to
// 400 members, and large groups with uneven capacities, warm-ups, known
// end offsets and rack tags.
func digestCases() []abitest.Case {
	cases := append(abitest.Cases(false), ratioCases()...)
	for seed := 1; seed <= parityCases+50; seed++ {
		cases = append(cases, abitest.Case{Name: fmt.Sprint("parity-", seed), Req: genParity(seed).req})
	}
	for seed := uint64(1); seed <= 300; seed++ {
		cases = append(cases, abitest.Case{Name: fmt.Sprint("random-", seed), Req: randomGroup(seed)})
	}
	for seed := uint64(1001); seed <= 1060; seed++ {
		cases = append(cases, abitest.Case{Name: fmt.Sprint("random-large-", seed), Req: randomGroupUpTo(seed, 400, 120)})
	}
	for seed := uint64(1); seed <= 40; seed++ {
		cases = append(cases, abitest.Case{Name: fmt.Sprint("lagging-", seed), Req: laggingGroup(seed)})
	}
	for i, sh := range []abitest.Shape{
		{Members: 1000, Processes: 300, Subtopologies: 8, Partitions: 250, StatelessEach: 4, Standbys: 2, History: 90, Offsets: true, Seed: 71},
		{Members: 700, Processes: 700, Subtopologies: 5, Partitions: 400, Standbys: 1, History: 60, Offsets: true, RandomIDs: true, Seed: 72},
		{Members: 500, Processes: 170, Subtopologies: 4, Partitions: 300, Standbys: 3, History: 100, Offsets: true, Seed: 73},
		{Members: 1000, Processes: 1000, Subtopologies: 10, Partitions: 200, Standbys: 2, History: 0, Seed: 74},
	} {
		req := abitest.Generate(sh)
		req.Configs.NumWarmupReplicas = int32(2 + 50*(i%2))
		req.Configs.AcceptableRecoveryLag = []int64{100, 0, 1000, math.MaxInt64}[i]
		total := req.NumTasks()
		for m := range req.Members {
			if m%7 == 0 { // some members know the end offsets
				for t := int32(0); t < total; t++ {
					req.Members[m].TaskEndOffsets = append(req.Members[m].TaskEndOffsets, abi.TaskOffset{Task: t, Offset: int64(1000 + t%13)})
				}
			}
			if i == 2 {
				p := int(req.Members[m].Process)
				req.Members[m].ClientTags = []abi.KV{{Key: "zone", Value: fmt.Sprint("z", p%3)}}
			}
		}
		if i == 2 {
			req.Configs.RackAwareAssignmentTags = []string{"zone"}
		}
		cases = append(cases, abitest.Case{Name: fmt.Sprint("large-", i), Req: req})
	}
	return cases
}

// digest is the SHA-256 of the encoded response, or of the error text.
func digest(req *abi.AssignRequest) (string, error) {
	resp, err := ha.Assign(req)
	var b []byte
	if err != nil {
		b = []byte("error: " + err.Error())
	} else if b, err = abi.AppendAssignResponse(nil, resp); err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// TestAssignmentsUnchanged holds the assignor to the answers recorded in
// testdata/assignments.sha256, byte for byte, on every digest case: the
// assignor's speed-ups must not change a single assignment. The file was
// written by the code before those changes (-update-digests rewrites it),
// with the lag rule that measures a member's offset against its own
// reported end offset: 15 of the random groups answer differently under
// that rule than under the group's-end rule it replaced.
func TestAssignmentsUnchanged(t *testing.T) {
	cases := digestCases()
	got := make([]string, len(cases))
	for i, c := range cases {
		d, err := digest(c.Req)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		got[i] = c.Name + " " + d
	}
	if *updateDigests {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(digestFile, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.Open(digestFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want []string
	for sc := bufio.NewScanner(f); sc.Scan(); {
		want = append(want, sc.Text())
	}
	if len(want) != len(got) {
		t.Fatalf("%s has %d digests for %d cases", digestFile, len(want), len(got))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("assignment changed: got %q, recorded %q", got[i], want[i])
		}
	}
}
