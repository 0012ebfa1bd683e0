package host

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host/runtime"
)

// TestTickFiresInSlices: a mass expiry — 300 members of one streams
// group whose sessions end at once — is fired by several Ticks of at
// most tickTimers timers each, and a shard with due timers left reports
// a deadline already passed, so the runtime queues the next Tick at once
// (the partition's other groups step in between). Every member expires
// in the end, as with one Tick.
func TestTickFiresInSlices(t *testing.T) {
	cfg := core.DefaultConfig()
	cfg.Streams.SessionTimeoutMs = 45000
	c, err := core.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const members = 300
	now := int64(1_000_000)
	for i := range members {
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Version = 1
		proc := "p"
		req.Group, req.MemberID, req.RebalanceTimeoutMillis, req.ProcessID = "mass", fmt.Sprint("m", i), 30000, &proc
		req.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
			{SubtopologyID: "0", SourceTopics: []string{"in"}}}}
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		if _, err := c.Step(now, core.Request{ID: core.RequestID(i + 1), Client: core.ClientInfo{ClientID: "c"}, Body: req}); err != nil {
			t.Fatal(err)
		}
		c.Commit()
	}
	s := &shard{c: c}
	later := now + 10*60*1000 // every session over
	ticks := 0
	for {
		at, ok := s.NextDeadline()
		if !ok || at > later {
			break
		}
		before := len(c.TimerKeys())
		s.Step(later, runtime.Tick{})
		c.Commit()
		s.batch = batch{}
		s.encoded, s.encodedHost = 0, 0
		ticks++
		if fired := before - len(c.TimerKeys()); fired > tickTimers {
			t.Fatalf("tick %d fired %d timers, more than %d", ticks, fired, tickTimers)
		}
		if ticks > 10*members {
			t.Fatal("the expiry does not end")
		}
	}
	if ticks < members/tickTimers {
		t.Errorf("%d members expired in %d ticks: not sliced", members, ticks)
	}
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{"mass"}
	resp := readCore[*kmsg.StreamsGroupDescribeResponse](nil, c, req)
	if n := len(resp.Groups[0].Members); n != 0 {
		t.Errorf("%d members left after the ticks, want 0", n)
	}
	t.Logf("%d members expired in %d ticks", members, ticks)
}
