package core

import "testing"

// TestStreamsConfigMemo: a group's settings are resolved once an entry
// point and never carried into the next one or out of one: another group
// in the same entry point gets its own, a change of the group's settings
// between entry points is seen by the next one, and outside an entry
// point (replay) every call resolves afresh.
func TestStreamsConfigMemo(t *testing.T) {
	c, err := New(consumerTestConfig())
	if err != nil {
		t.Fatal(err)
	}
	def := c.cfg.Streams.HeartbeatIntervalMs
	set := func(group string, ms int32) {
		c.setStreamsGroupConfig(group, StreamsGroupOverrides{HeartbeatIntervalMs: &ms})
	}
	want := func(group string, ms int32) {
		t.Helper()
		if got := c.streamsConfig(group).HeartbeatIntervalMs; got != ms {
			t.Fatalf("group %q: heartbeat interval %d, want %d", group, got, ms)
		}
	}
	set("a", def+1)
	c.begin(1)
	want("a", def+1)
	want("b", def)
	want("a", def+1)
	c.end()
	set("a", def+2)
	c.begin(2)
	want("a", def+2)
	c.end()
	// A change that reaches the overrides map without an input (as a
	// test or a future caller might) is seen by the next entry point.
	ms := def + 3
	c.overrides["a"] = StreamsGroupOverrides{HeartbeatIntervalMs: &ms}
	want("a", def+3) // no entry point: nothing kept
	c.begin(3)
	want("a", def+3)
	c.end()
}
