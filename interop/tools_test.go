package interop

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Kafka's own group command-line tools in the 4.4 jars (kafka-consumer-groups.sh
// and kafka-streams-groups.sh run these classes).
const (
	consumerGroupsTool = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
	streamsGroupsTool  = "org.apache.kafka.tools.streams.StreamsGroupCommand"
)

// toolRun is one finished run of a group tool.
type toolRun struct {
	args   string
	output string
	err    error
}

// runTool runs one of Kafka's group tools against bootstrap (bounded) and
// returns its output; a non-zero exit is an error.
func runTool(t *testing.T, dir, tool string, n *int, bootstrap string, args ...string) toolRun {
	t.Helper()
	*n++
	name := fmt.Sprintf("tool-%02d-%s", *n, tool[strings.LastIndex(tool, ".")+1:])
	p := startJava(t, name, dir, tool, append([]string{"--bootstrap-server", bootstrap}, args...)...)
	r := toolRun{args: strings.Join(args, " ")}
	select {
	case <-p.done:
		r.err = p.err
	case <-time.After(2 * time.Minute):
		p.kill()
		r.err = fmt.Errorf("no exit within 2m")
	}
	r.output = p.tail(200)
	return r
}

// expect fails the test unless the run succeeded and its output contains
// every want (and none of the unwanted, given after a "!" prefix).
func (r toolRun) expect(t *testing.T, wants ...string) {
	t.Helper()
	if r.err != nil {
		t.Errorf("%s: %v\n%s", r.args, r.err, r.output)
		return
	}
	for _, w := range wants {
		if neg, ok := strings.CutPrefix(w, "!"); ok {
			if strings.Contains(r.output, neg) {
				t.Errorf("%s: output contains %q:\n%s", r.args, neg, r.output)
			}
		} else if !strings.Contains(r.output, w) {
			t.Errorf("%s: output lacks %q:\n%s", r.args, w, r.output)
		}
	}
}

// expectLines fails the test unless the run succeeded and exactly n of its
// output lines match the regular expression re.
func (r toolRun) expectLines(t *testing.T, re string, n int) {
	t.Helper()
	if r.err != nil {
		t.Errorf("%s: %v\n%s", r.args, r.err, r.output)
		return
	}
	rx := regexp.MustCompile(re)
	got := 0
	for _, l := range strings.Split(r.output, "\n") {
		if rx.MatchString(l) {
			got++
		}
	}
	if got != n {
		t.Errorf("%s: %d lines match %s, want %d:\n%s", r.args, got, re, n, r.output)
	}
}

// runGroupTools is scenario 6: kafka-consumer-groups on a classic Kafka
// Streams group and kafka-streams-groups on a streams group — list,
// describe, reset offsets, delete — against bootstrap. classicGroup must be
// a scenario's classic group, stopped, that committed offsets on its input
// topic (topicsOf); the streams group reads the same topics.
func runGroupTools(t *testing.T, dir, bootstrap, classicGroup string, others ...*proc) {
	var n int
	cg := func(args ...string) toolRun { return runTool(t, dir, consumerGroupsTool, &n, bootstrap, args...) }
	sg := func(args ...string) toolRun { return runTool(t, dir, streamsGroupsTool, &n, bootstrap, args...) }

	cobs, err := observe(bootstrap, classicGroup, 250*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer cobs.close()
	cg("--list").expect(t, classicGroup)
	tp := topicsOf(classicGroup)
	cg("--describe", "--group", classicGroup).expect(t, tp.in)
	// Offsets can be reset only once the stopped members' sessions expired.
	if err := cobs.waitFor(startBound, "classic Empty", func(v groupView) bool {
		return v.kind == "classic" && v.state == "Empty"
	}); err != nil {
		t.Fatalf("%v\n%s", err, cobs.report())
	}
	cg("--reset-offsets", "--group", classicGroup, "--topic", tp.in, "--to-earliest", "--execute").
		expectLines(t, `^`+classicGroup+`\s+`+tp.in+`\s+\d+\s+0\s*$`, inputPartitions)
	cg("--delete", "--group", classicGroup).expect(t, "successful")
	cg("--list").expect(t, "!"+classicGroup)

	// A streams group: one streams-protocol instance, then stopped.
	const streamsGroup = "interop-tools-streams"
	s := &scenarioRun{t: t, name: "6 tools", dir: dir, group: streamsGroup, others: others}
	obs, err := observe(bootstrap, streamsGroup, 250*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	s.obs = obs
	defer obs.close()
	s.fleet = newFleet(t, dir, bootstrap, streamsGroup, 1, tp)
	s.fleet.start(0, "streams", 0)
	s.must("streams instance running", s.fleet.waitRunning(startBound))
	s.must("streams group", s.stable("streams", 1))

	sg("--list").expect(t, streamsGroup)
	sg("--describe", "--group", streamsGroup).expect(t, tp.in)
	sg("--describe", "--members", "--group", streamsGroup).expect(t, "app0-streams-0", "ACTIVE: 0:[0,1,2,3,4,5]; 1:[0,1,2,3,4,5]")
	s.must("stop instance", s.fleet.stopAll())
	s.must("streams group empty", s.obs.waitFor(startBound, "streams Empty", func(v groupView) bool {
		return v.kind == "streams" && v.state == "Empty"
	}))
	sg("--reset-offsets", "--group", streamsGroup, "--input-topic", tp.in, "--to-earliest", "--execute").
		expectLines(t, `^`+streamsGroup+`\s+`+tp.in+`\s+\d+\s+0\s*$`, inputPartitions)
	sg("--delete", "--group", streamsGroup).expect(t, "successful")
	sg("--list").expect(t, "!"+streamsGroup)
	if t.Failed() {
		t.Log(s.failureReport())
	}
}
