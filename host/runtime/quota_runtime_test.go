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
	throttledOnceItDelays(t, rt, "big", "canary")
}

// throttledOnceItDelays checks that key, over its share of partition 0,
// is not throttled, then steps an event of key while an event of other
// waits behind it, and checks that key is throttled then and other is
// not.
func throttledOnceItDelays(t *testing.T, rt *runtime.Runtime, key, other string) {
	t.Helper()
	if d := rt.Throttle(0, key); d != 0 {
		t.Fatalf("%s, its steps delaying nobody: throttled %v", key, d)
	}
	held := iev{name: key + "-held", hold: make(chan struct{}), entered: make(chan struct{})}
	submit(t, rt, key, held)
	<-held.entered
	waiting := newReply()
	submit(t, rt, other, iev{name: other + "-waiting", reply: waiting})
	close(held.hold)
	if err := answered(t, waiting, other+"'s event behind "+key+"'s step"); err != nil {
		t.Fatal(err)
	}
	if d := rt.Throttle(0, key); d == 0 {
		t.Fatalf("%s: %s waited behind its step, not throttled", key, other)
	}
	if d := rt.Throttle(0, other); d != 0 {
		t.Fatalf("%s, under its share: throttled %v", other, d)
	}
}
