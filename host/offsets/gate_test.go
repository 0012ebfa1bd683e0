package offsets

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// runAsync starts a Run of groups whose step signals started and then
// waits for release; the result channel gets Run's error.
func runAsync(s *Gates, ctx context.Context, claims []Claim, started chan<- string, release <-chan struct{}, name string) <-chan error {
	out := make(chan error, 1)
	go func() {
		_, err := s.Run(ctx, claims, func() (kmsg.Response, error) {
			started <- name
			<-release
			return nil, nil
		})
		out <- err
	}()
	return out
}

func waitQueued(t *testing.T, s *Gates, group string, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); s.Queued(group) != n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d steps of %s queued, want %d", s.Queued(group), group, n)
		}
	}
}

// TestGateSerializesAGroupOnly: a second step of group g starts only when
// the first has returned, while a step of another group runs meanwhile;
// a group with nothing queued leaves no gate behind.
func TestGateSerializesAGroupOnly(t *testing.T) {
	var s Gates
	started := make(chan string, 3)
	rel1, rel2, relOther := make(chan struct{}), make(chan struct{}), make(chan struct{})
	done1 := runAsync(&s, context.Background(), Whole("g"), started, rel1, "first")
	if got := <-started; got != "first" {
		t.Fatalf("started %s, want first", got)
	}
	done2 := runAsync(&s, context.Background(), Whole("g"), started, rel2, "second")
	waitQueued(t, &s, "g", 2)
	doneOther := runAsync(&s, context.Background(), Whole("other"), started, relOther, "other")
	if got := <-started; got != "other" {
		t.Fatalf("started %s while g's first step runs, want other", got)
	}
	close(relOther)
	if err := <-doneOther; err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-started:
		t.Fatalf("%s started before g's first step returned", got)
	case <-time.After(50 * time.Millisecond):
	}
	close(rel1)
	if err := <-done1; err != nil {
		t.Fatal(err)
	}
	if got := <-started; got != "second" {
		t.Fatalf("started %s, want second", got)
	}
	close(rel2)
	if err := <-done2; err != nil {
		t.Fatal(err)
	}
	if n := s.Queued("g"); n != 0 || len(s.queues) != 0 {
		t.Fatalf("after every step: %d queued, %d gates kept", n, len(s.queues))
	}
}

// TestAcquireInIDOrder: requests naming the same groups in opposite
// orders (one naming a group twice) never deadlock, each holding one gate
// and waiting for the other.
func TestAcquireInIDOrder(t *testing.T) {
	var s Gates
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	errs := make(chan error, 200)
	for i := range 100 {
		groups := []string{"b", "a", "a"}
		if i%2 == 1 {
			groups = []string{"a", "b"}
		}
		go func() {
			release, err := s.Acquire(ctx, Whole(groups...))
			if err == nil {
				release()
			}
			errs <- err
		}()
	}
	for range 100 {
		if err := <-errs; err != nil {
			t.Fatalf("acquire: %v (deadlocked until the deadline)", err)
		}
	}
	if len(s.queues) != 0 {
		t.Fatalf("%d gates kept after every release", len(s.queues))
	}
}

// TestAcquireCancelledReleasesWhatItHeld: a request waiting for its
// second gate gives up when its context ends, and gives back the first.
func TestAcquireCancelledReleasesWhatItHeld(t *testing.T) {
	var s Gates
	holdB, err := s.Acquire(context.Background(), Whole("b"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan error, 1)
	go func() {
		_, err := s.Acquire(ctx, Whole("a", "b"))
		out <- err
	}()
	waitQueued(t, &s, "b", 2)
	if s.Queued("a") != 1 {
		t.Fatalf("a: %d queued, want 1 (held while b is waited for)", s.Queued("a"))
	}
	cancel()
	if err := <-out; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled acquire: %v", err)
	}
	if s.Queued("a") != 0 || s.Queued("b") != 1 {
		t.Fatalf("after the cancel: a %d, b %d queued, want 0 and 1", s.Queued("a"), s.Queued("b"))
	}
	relA, err := s.Acquire(context.Background(), Whole("a")) // free again
	if err != nil {
		t.Fatal(err)
	}
	relA()
	holdB()
}

// TestRunOutlivesItsContext: a client giving up while its step runs gets
// its context's error at once, but the step runs to its end and the gate
// is held until then.
func TestRunOutlivesItsContext(t *testing.T) {
	var s Gates
	started := make(chan string, 2)
	release := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := runAsync(&s, ctx, Whole("g"), started, release, "first")
	<-started
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("run after its context ended: %v", err)
	}
	if s.Queued("g") != 1 {
		t.Fatalf("%d steps of g queued while the detached step runs, want 1", s.Queued("g"))
	}
	relNext := make(chan struct{})
	next := runAsync(&s, context.Background(), Whole("g"), started, relNext, "next")
	waitQueued(t, &s, "g", 2)
	select {
	case got := <-started:
		t.Fatalf("%s started while the detached step runs", got)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if got := <-started; got != "next" {
		t.Fatalf("started %s", got)
	}
	close(relNext)
	if err := <-next; err != nil {
		t.Fatal(err)
	}
}

func parts(group string, ps ...int32) []Claim {
	c := Claim{Group: group, Parts: []Part{}}
	for _, p := range ps {
		c.Parts = append(c.Parts, Part{Topic: "t", Partition: p})
	}
	return []Claim{c}
}

// notStarted fails if a step signals started within a short wait.
func notStarted(t *testing.T, started <-chan string, why string) {
	t.Helper()
	select {
	case got := <-started:
		t.Fatalf("%s started %s", got, why)
	case <-time.After(50 * time.Millisecond):
	}
}

func finish(t *testing.T, release chan struct{}, done <-chan error) {
	t.Helper()
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestDisjointPartitionsRunAtOnce: steps of one group on disjoint
// partitions run at once (two members committing their own partitions);
// a step on a partition another step holds waits for it.
func TestDisjointPartitionsRunAtOnce(t *testing.T) {
	var s Gates
	started := make(chan string, 3)
	rel0, rel1, relAgain := make(chan struct{}), make(chan struct{}), make(chan struct{})
	done0 := runAsync(&s, context.Background(), parts("g", 0, 2), started, rel0, "p0")
	if got := <-started; got != "p0" {
		t.Fatalf("started %s", got)
	}
	done1 := runAsync(&s, context.Background(), parts("g", 1, 3), started, rel1, "p1")
	if got := <-started; got != "p1" {
		t.Fatalf("started %s while a step on other partitions runs, want p1", got)
	}
	again := runAsync(&s, context.Background(), parts("g", 2), started, relAgain, "p2")
	waitQueued(t, &s, "g", 3)
	notStarted(t, started, "while the step holding partition 2 runs")
	finish(t, rel1, done1)
	notStarted(t, started, "while the step holding partition 2 runs")
	finish(t, rel0, done0)
	if got := <-started; got != "p2" {
		t.Fatalf("started %s", got)
	}
	finish(t, relAgain, again)
	waitQueued(t, &s, "g", 0) // the last step leaves its queue just after Run returns
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queues) != 0 {
		t.Fatalf("%d queues kept after every step", len(s.queues))
	}
}

// TestWholeGroupKeepsArrivalOrder: a step of the whole group waits for
// the partition steps before it, and a partition step arriving after it
// waits for it even when it overlaps nothing running (no step overtakes
// an earlier one it overlaps); a whole-group step that gives up lets the
// steps behind it go on.
func TestWholeGroupKeepsArrivalOrder(t *testing.T) {
	var s Gates
	started := make(chan string, 4)
	rel0, relWhole, rel1 := make(chan struct{}), make(chan struct{}), make(chan struct{})
	done0 := runAsync(&s, context.Background(), parts("g", 0), started, rel0, "p0")
	<-started
	whole := runAsync(&s, context.Background(), Whole("g"), started, relWhole, "whole")
	waitQueued(t, &s, "g", 2)
	done1 := runAsync(&s, context.Background(), parts("g", 1), started, rel1, "p1")
	waitQueued(t, &s, "g", 3)
	notStarted(t, started, "before the partition step ahead of the whole-group step returned")
	finish(t, rel0, done0)
	if got := <-started; got != "whole" {
		t.Fatalf("started %s, want whole", got)
	}
	notStarted(t, started, "while the whole-group step ahead of it runs")
	finish(t, relWhole, whole)
	if got := <-started; got != "p1" {
		t.Fatalf("started %s, want p1", got)
	}
	finish(t, rel1, done1)

	// A whole-group step that gives up while waiting.
	rel0, rel1 = make(chan struct{}), make(chan struct{})
	done0 = runAsync(&s, context.Background(), parts("g", 0), started, rel0, "p0")
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := runAsync(&s, ctx, Whole("g"), started, make(chan struct{}), "whole")
	waitQueued(t, &s, "g", 2)
	done1 = runAsync(&s, context.Background(), parts("g", 1), started, rel1, "p1")
	waitQueued(t, &s, "g", 3)
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("whole-group step that gave up: %v", err)
	}
	if got := <-started; got != "p1" {
		t.Fatalf("started %s, want p1 (partition 0's step is still running)", got)
	}
	finish(t, rel1, done1)
	finish(t, rel0, done0)
}
