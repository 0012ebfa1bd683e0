package runtime_test

import (
	"testing"
	"time"

	"github.com/coordhost/coordhost/host/runtime"
)

// TestSoloWaitsForItsGroupsWrite: an Inline event that writes nothing is
// stepped on its submitter's goroutine at once when its partition has
// nothing in flight (solo), and answered there; while a round holding a
// record of its key waits for its append, the same event is answered
// only once that append is durable — the shortcut of an idle partition
// never answers before a pending write of its group. An Inline event
// that writes a record at an idle partition is answered only after its
// own append, and one whose record the log refuses gets the error.
func TestSoloWaitsForItsGroupsWrite(t *testing.T) {
	pl := newPipeline(t, 4)
	defer pl.close()
	submit := func(in pput, key string) chan error {
		t.Helper()
		in.reply = make(chan error, 1)
		if err := pl.rt.Submit(0, runtime.Event{Key: key, Inline: true, Input: in}); err != nil {
			t.Fatal(err)
		}
		return in.reply
	}

	// Idle: stepped and answered before Submit returns, no append.
	me, stepped := goid(), uint64(0)
	hb := submit(pput{key: "hb1", none: true, onStep: func() { stepped = goid() }}, "g")
	select {
	case err := <-hb:
		if err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatal("a heartbeat at an idle partition was not answered when Submit returned")
	}
	if stepped != me {
		t.Fatal("a heartbeat at an idle partition was not stepped on its submitter's goroutine")
	}
	pl.wait("hb1")
	pl.wait("|seal")
	pl.noAppend()

	// A write of g in flight: g's heartbeat waits for it.
	w := submit(pput{key: "w", val: "1", owner: "g"}, "g")
	pl.wait("w")
	pl.wait("|seal")
	held := pl.nextAppend()
	hb = submit(pput{key: "hb2", none: true}, "g")
	pl.wait("hb2")
	pl.wait("|seal")
	pending(t, "g's heartbeat behind g's write", hb)
	pending(t, "g's write", w)
	// Another group's heartbeat depends on nothing in flight.
	other := submit(pput{key: "hb3", none: true}, "h")
	pl.wait("hb3")
	pl.wait("|seal")
	if err := answer(t, "h's heartbeat beside g's write", other); err != nil {
		t.Fatal(err)
	}
	pending(t, "g's heartbeat behind g's write", hb)
	held.result <- nil
	if err := answer(t, "g's write", w); err != nil {
		t.Fatal(err)
	}
	if err := answer(t, "g's heartbeat", hb); err != nil {
		t.Fatal(err)
	}

	// A write at an idle partition: appended before it is answered.
	waitIdle(t, pl)
	w = submit(pput{key: "w2", val: "2", owner: "g"}, "g")
	pl.wait("w2")
	pl.wait("|seal")
	held = pl.nextAppend()
	pending(t, "a write at an idle partition", w)
	held.result <- nil
	if err := answer(t, "a write at an idle partition", w); err != nil {
		t.Fatal(err)
	}

	// A record the log refuses, at an idle partition: its error, no append.
	waitIdle(t, pl)
	bad := submit(pput{key: "bad", val: "3", bad: true, owner: "g"}, "g")
	pl.wait("bad")
	if err := answer(t, "a refused record", bad); err == nil {
		t.Fatal("a record the log refuses was answered without an error")
	}
	pl.wait("|seal")
	pl.noAppend()
}

// waitIdle waits until pl's partition has nothing in flight: a Read is
// stepped only then.
func waitIdle(t *testing.T, pl *pipeline) {
	t.Helper()
	done := make(chan struct{})
	if err := pl.rt.Submit(0, runtime.Event{Read: true, Input: get{fn: func(map[string]string) { close(done) }}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the partition never became idle")
	}
	for { // the Read's round reports its seals
		select {
		case k := <-pl.stepped:
			if k != "|seal" {
				t.Fatalf("shard reported %q after a Read", k)
			}
		case <-time.After(50 * time.Millisecond):
			return
		}
	}
}

// TestSoloRealClockTimerAndQuota: on the runtime's own clock (Config.Now
// unset, where a solo step's clock readings serve its quota charge and
// the timer check alike), a solo step that brings the deadline from
// 10 s to 20 ms away still gets its Tick on time, and a solo step's time
// counts towards its key's quota: a key stepping more than its share is
// throttled once another key's event queued during its step, not while
// none did.
func TestSoloRealClockTimerAndQuota(t *testing.T) {
	rt, s, ticks := startBound(t, runtime.Config{QuotaPercent: 5, MaxThrottle: time.Hour})
	solo := func(key string, onStep func()) {
		t.Helper()
		me, stepped := goid(), uint64(0)
		reply := make(chan error, 1)
		in := put{group: key, key: "k", val: "v", reply: reply, onStep: func() { stepped = goid(); onStep() }}
		if err := rt.Submit(0, runtime.Event{Key: key, Inline: true, Input: in}); err != nil {
			t.Fatal(err)
		}
		if err := <-reply; err != nil {
			t.Fatal(err)
		}
		if stepped != me {
			t.Fatalf("%s's event was not stepped on its submitter's goroutine (solo)", key)
		}
	}
	solo("g", func() { s.deadline = time.Now().Add(20 * time.Millisecond).UnixMilli(); s.bound = s.deadline })
	giveUp := time.Now().Add(3 * time.Second)
	for readTicks(rt, ticks) < 1 {
		if time.Now().After(giveUp) {
			t.Fatal("no Tick 3 s after a solo step moved the deadline 20 ms away")
		}
		time.Sleep(10 * time.Millisecond)
	}

	// 60 ms of step time is more than 5 % of the quota's second.
	solo("big", func() { time.Sleep(60 * time.Millisecond) })
	if d := rt.Throttle(0, "big"); d != 0 {
		t.Fatalf("big, its steps delaying nobody: throttled %v", d)
	}
	waiting := make(chan error, 1)
	solo("big", func() {
		if err := rt.Submit(0, runtime.Event{Key: "canary", Input: put{group: "canary", key: "k", val: "v", reply: waiting}}); err != nil {
			t.Error(err)
		}
	})
	if err := <-waiting; err != nil {
		t.Fatal(err)
	}
	if d := rt.Throttle(0, "big"); d == 0 {
		t.Fatal("big: canary waited behind its solo step, not throttled")
	}
	if d := rt.Throttle(0, "canary"); d != 0 {
		t.Fatalf("canary, under its share: throttled %v", d)
	}
}
