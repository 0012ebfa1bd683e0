package runtime_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/coordhost/coordhost/host/runtime"
)

// TestQuotaThrottlesOnlyWhenOthersWait: a key stepping far more than its
// share of its partition is not throttled while it is alone there (the
// quota is work-conserving); once an event of another key waited behind
// one of its steps, it is.
func TestQuotaThrottlesOnlyWhenOthersWait(t *testing.T) {
	// Each clock reading is a millisecond later: every step costs the
	// big key at least a millisecond, 100 steps twice its 5 % share.
	rt, _, log := isoRuntime(t, runtime.Config{Workers: 1, QuotaPercent: 5, MaxThrottle: time.Hour, Now: steppingClock()})
	go func() {
		for h := range log.calls {
			h.result <- nil
		}
	}()
	gate := iev{name: "gate", hold: make(chan struct{}), entered: make(chan struct{})}
	submit(t, rt, "", gate)
	<-gate.entered // the big key's events queue as one round
	last := newReply()
	for i := range 100 {
		in := iev{name: fmt.Sprintf("b%d", i)}
		if i == 99 {
			in.reply = last
		}
		submit(t, rt, "big", in)
	}
	close(gate.hold)
	if err := answered(t, last, "the big key's last event"); err != nil {
		t.Fatal(err)
	}
	if d := rt.Throttle(0, "big"); d != 0 {
		t.Fatalf("alone on its partition: throttled %v", d)
	}
	held := iev{name: "b100", hold: make(chan struct{}), entered: make(chan struct{})}
	submit(t, rt, "big", held)
	<-held.entered
	canary := newReply()
	submit(t, rt, "canary", iev{name: "c", reply: canary}) // waits behind b100's step
	close(held.hold)
	if err := answered(t, canary, "the canary"); err != nil {
		t.Fatal(err)
	}
	if d := rt.Throttle(0, "big"); d == 0 {
		t.Fatal("a canary waited behind its step: not throttled")
	}
	if d := rt.Throttle(0, "canary"); d != 0 {
		t.Fatalf("the canary: throttled %v", d)
	}
}
