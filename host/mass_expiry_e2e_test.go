package host_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// massWireExpiry is how long the expiry's window of
// TestMassExpiryThroughBinary lasts at least after the sessions ran out
// (in one process on the shared machine massMembers members expired in
// about 1.3 s); it goes on while members are left.
const massWireExpiry = 5 * time.Second

// TestMassExpiryThroughBinary is TestMassExpiryDoesNotStallItsPartition
// through the coordhost binary (50 store partitions, the group quota on,
// streams.max.size massMembers, a session timeout of massSessionMs) and
// over the wire: in each of floodRounds rounds a process starts on a
// store holding a group of massMembers members that no client heartbeats
// (their joins as core wrote them: joining 10,000 members over the wire
// took 53–89 s on the shared machine, longer than a session the test
// can wait for), so their sessions all run out massSessionMs after the
// load, while 6 canary groups heartbeat over their own connections,
// three on the mass group's partition (the group is "flood", the group
// joinWireCanaries places them by) and three on others. Each round
// measures the canaries after the load's settling (unloaded) and from
// a second before the sessions run out until the group is empty, and at
// least massWireExpiry after. It fails when, over the rounds, the median p99 of
// the canaries on the mass group's partition or on other partitions
// during the expiry is over 2× the round's unloaded p99 (the median of
// the rounds' ratios) or over sameBar (100 ms). A timing test: it runs
// with COORDHOST_FLOOD=1 (about 2 minutes with the build);
// COORDHOST_FLOOD_ROUNDS sets the rounds.
func TestMassExpiryThroughBinary(t *testing.T) {
	if os.Getenv("COORDHOST_FLOOD") != "1" {
		t.Skip("timing test: set COORDHOST_FLOOD=1 to run it")
	}
	rounds := envInt(t, "COORDHOST_FLOOD_ROUNDS", floodRounds)
	for _, v := range []string{"COORDHOST_FLOOD", "COORDHOST_FLOOD_ROUNDS"} {
		t.Setenv(v, os.Getenv(v)) // the child reads COORDHOST_* as its config
		os.Unsetenv(v)
	}
	const group = "flood"
	written := filepath.Join(t.TempDir(), "coordhost.db")
	writeMassGroup(t, written, group)
	where := [2]string{"other partitions", "the mass group's partition"}
	var ratios [2][]float64
	var p99s [2][]time.Duration
	for r := 1; r <= rounds; r++ {
		dir := t.TempDir()
		copyFile(t, written, filepath.Join(dir, "coordhost.db"))
		p := startProc(t, dir, freePort(t), r,
			fmt.Sprintf("--groups.defaults.streams.max.size=%d", massMembers),
			fmt.Sprintf("--groups.defaults.streams.session.timeout.ms=%d", massSessionMs))
		loaded := time.Now() // the store is loaded before the listener answers
		w := joinWireCanaries(t, p.addr)
		if n := groupSize(t, p.addr, group); n != massMembers {
			t.Fatalf("round %d: the loaded group has %d members, want %d", r, n, massMembers)
		}
		time.Sleep(time.Until(loaded.Add(massSessionMs * time.Millisecond / 3))) // the load's settling
		var base, expiry [2]time.Duration
		base[0], base[1] = w.measure(t, 200)
		expires := loaded.Add(massSessionMs * time.Millisecond)
		time.Sleep(time.Until(expires.Add(-time.Second)))
		var lat [2][]time.Duration
		for end := expires.Add(massWireExpiry); ; end = end.Add(time.Second) {
			for time.Now().Before(end) {
				o, s := canaryLatencies(t, w.epochs, func(g string) bool { return w.same[g] }, 20, w.heartbeat)
				lat[0], lat[1] = append(lat[0], o...), append(lat[1], s...)
			}
			// The window goes on, a second at a time, until the group is
			// empty (a describe each second: each holds the partition's
			// next rounds until its appends are done).
			left := groupSize(t, p.addr, group)
			if left == 0 {
				break
			}
			if time.Since(expires) > time.Minute {
				t.Fatalf("round %d: %d members left a minute after their sessions ran out", r, left)
			}
		}
		for i := range lat {
			expiry[i], _ = quantiles(lat[i])
			ratios[i], p99s[i] = append(ratios[i], ratio(expiry[i], base[i])), append(p99s[i], expiry[i])
		}
		t.Logf("round %d: canary p99 unloaded other partitions %v, the mass group's partition %v; during the expiry of %d members (%d heartbeats) %v (%.1f×), %v (%.1f×); load average %s",
			r, base[0], base[1], massMembers, len(lat[0])+len(lat[1]), expiry[0], ratios[0][r-1], expiry[1], ratios[1][r-1], loadAverage())
		p.kill()
	}
	for i := range where {
		t.Logf("mass expiry through the binary, median of %d rounds: canary p99 on %s %v, %.1f× unloaded (bars %v and 2×)",
			rounds, where[i], median(p99s[i]), median(ratios[i]), sameBar)
		if median(p99s[i]) > sameBar || median(ratios[i]) > 2 {
			t.Errorf("mass expiry: canary p99 on %s %v, %.1f× unloaded (bars %v and 2×), medians of %d rounds",
				where[i], median(p99s[i]), median(ratios[i]), sameBar, rounds)
		}
	}
}

// groupSize returns how many members streams group has, asked with a
// StreamsGroupDescribe on a connection of its own to addr.
func groupSize(t *testing.T, addr, group string) int {
	t.Helper()
	w, err := dialWire(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer w.c.Close()
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := w.do(req)
	if err != nil {
		t.Fatal(err)
	}
	g := resp.(*kmsg.StreamsGroupDescribeResponse).Groups[0]
	if g.ErrorCode != 0 {
		t.Fatalf("describe %s: %v", group, kerr.ErrorForCode(g.ErrorCode))
	}
	return len(g.Members)
}

// copyFile copies the file at from to to.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
