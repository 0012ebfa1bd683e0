package runtime_test

import (
	"bytes"
	"fmt"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coordhost/coordhost/host/runtime"
)

// goid returns the calling goroutine's id, read from its stack header.
func goid() uint64 {
	var buf [64]byte
	b := buf[:goruntime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	id, _ := strconv.ParseUint(string(b[:bytes.IndexByte(b, ' ')]), 10, 64)
	return id
}

// TestRuntimeInline: an Inline event for an idle partition is stepped on
// the submitting goroutine and is as durable as any other; one for a
// partition with a step in progress, or an event without Inline, goes to
// a worker; events of one key keep their order either way.
func TestRuntimeInline(t *testing.T) {
	for name, newLog := range backends(t, 4) {
		t.Run(name, func(t *testing.T) {
			log := newLog()
			rt := start(t, log, 4, 1, map[int]*kvShard{})
			// stepOn submits a put and reports the goroutine that stepped
			// it, whether it was the submitter, and the put's outcome.
			stepOn := func(inline bool, key, val string) (bool, error) {
				var stepped uint64
				reply := make(chan error, 1)
				me := goid()
				ev := runtime.Event{Input: put{group: "g", key: key, val: val, reply: reply, onStep: func() { stepped = goid() }}, Key: "g", Inline: inline}
				if err := rt.Submit(rt.PartitionFor("g"), ev); err != nil {
					return false, err
				}
				err := <-reply
				return stepped == me, err
			}
			// A put is answered at its Commit, a moment before its owner
			// lets the partition go: the next put finds it idle after at
			// most a few tries.
			for i := range 20 {
				deadline := time.Now().Add(10 * time.Second)
				for {
					here, err := stepOn(true, "k", fmt.Sprint(i))
					if err != nil {
						t.Fatal(err)
					}
					if here {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("put %d: an Inline event for an idle partition was never stepped by its submitter", i)
					}
					time.Sleep(time.Millisecond)
				}
			}
			if here, err := stepOn(false, "k", "20"); err != nil || here {
				t.Fatalf("an event without Inline: stepped on the submitter %v, err %v", here, err)
			}

			// A step in progress on a worker: the Inline event queues
			// behind it and is stepped after it, not by the submitter.
			p := rt.PartitionFor("g")
			entered, leave := make(chan struct{}), make(chan struct{})
			blockReply := make(chan error, 1)
			if err := rt.Submit(p, runtime.Event{Key: "g", Input: put{group: "g", key: "k", val: "blocked", reply: blockReply,
				onStep: func() { close(entered); <-leave }}}); err != nil {
				t.Fatal(err)
			}
			<-entered
			var wg sync.WaitGroup
			var here bool
			var err error
			submitted := make(chan struct{})
			wg.Add(1)
			go func() {
				defer wg.Done()
				var stepped uint64
				reply := make(chan error, 1)
				me := goid()
				ev := runtime.Event{Input: put{group: "g", key: "k", val: "last", reply: reply, onStep: func() { stepped = goid() }}, Key: "g", Inline: true}
				if err = rt.Submit(p, ev); err != nil {
					close(submitted)
					return
				}
				close(submitted)
				err = <-reply
				here = stepped == me
			}()
			select {
			case <-submitted:
			case <-time.After(10 * time.Second):
				t.Fatal("Submit of an Inline event waited for the step in progress")
			}
			close(leave)
			wg.Wait()
			if err := <-blockReply; err != nil {
				t.Fatal(err)
			}
			if err != nil || here {
				t.Fatalf("an Inline event behind a step in progress: stepped on the submitter %v, err %v", here, err)
			}

			// Durable and in order: a runtime replaying the log sees the
			// last put.
			rt2 := start(t, log, 4, 1, map[int]*kvShard{})
			if got := readAll(t, rt2)["g/k"]; got != "last" {
				t.Fatalf("replayed g/k = %q, want %q", got, "last")
			}
		})
	}
}

// TestRuntimeInlineWhileStalled: while every queued event waits for an
// append (the pipeline is full with a flooded group's rounds and the
// next of its events is queued), an Inline event of a group with nothing
// in flight is stepped on the submitting goroutine and answered before
// any of those appends ends, as a worker would step it then (alone,
// ahead of the stalled events): a heartbeat behind a mass expiry's
// appends is not handed to a worker and back. The stalled event keeps
// its place and is stepped once an append ends.
func TestRuntimeInlineWhileStalled(t *testing.T) {
	pl := newPipeline(t, 2)
	defer pl.close()
	flood := func(key string) {
		t.Helper()
		if err := pl.rt.Submit(0, runtime.Event{Key: "flood", Input: pput{key: key, val: "v", owner: "flood"}}); err != nil {
			t.Fatal(err)
		}
	}
	flood("f1")
	pl.wait("f1")
	pl.wait("|seal")
	first := pl.nextAppend() // held: the pipeline holds f1's round and, next, f2's
	flood("f2")
	pl.wait("f2")
	pl.wait("|seal")
	flood("f3") // waits for an append: the pipeline is full

	deadline := time.Now().Add(5 * time.Second)
	for i := 0; ; i++ {
		me, stepped := goid(), uint64(0)
		reply := make(chan error, 1)
		key := fmt.Sprintf("canary-%d", i)
		ev := runtime.Event{Key: "canary", Inline: true,
			Input: pput{key: key, none: true, reply: reply, onStep: func() { stepped = goid() }}}
		if err := pl.rt.Submit(0, ev); err != nil {
			t.Fatal(err)
		}
		pl.wait(key)
		pl.wait("|seal")
		if err := answer(t, key+" (with the appends before it held)", reply); err != nil {
			t.Fatal(err)
		}
		if stepped == me {
			break
		}
		// A worker may still own the partition from f3's submission: it
		// lets it go without stepping f3, after which the partition is
		// stalled.
		if time.Now().After(deadline) {
			t.Fatal("an Inline event for a stalled partition was never stepped by its submitter")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case k := <-pl.stepped:
		t.Fatalf("%q stepped while the pipeline is full", k)
	default:
	}
	first.result <- nil
	pl.wait("f3")
	pl.wait("|seal")
	// f2's and f3's records go in one append or two: f3 is stepped and
	// sealed once f1's append ended, and the appender takes f2 alone only
	// if it looks before that seal (group commit takes every round sealed
	// by then). Waiting for two appends failed when f3 was sealed first.
	for appended := ""; !strings.Contains(appended, "f3"); {
		h := pl.nextAppend()
		appended += h.keys()
		h.result <- nil
	}
}
