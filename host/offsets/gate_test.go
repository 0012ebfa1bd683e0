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
func runAsync(s *Gates, ctx context.Context, groups []string, started chan<- string, release <-chan struct{}, name string) <-chan error {
	out := make(chan error, 1)
	go func() {
		_, err := s.Run(ctx, groups, func() (kmsg.Response, error) {
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
	done1 := runAsync(&s, context.Background(), []string{"g"}, started, rel1, "first")
	if got := <-started; got != "first" {
		t.Fatalf("started %s, want first", got)
	}
	done2 := runAsync(&s, context.Background(), []string{"g"}, started, rel2, "second")
	waitQueued(t, &s, "g", 2)
	doneOther := runAsync(&s, context.Background(), []string{"other"}, started, relOther, "other")
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
	if n := s.Queued("g"); n != 0 || len(s.gates) != 0 {
		t.Fatalf("after every step: %d queued, %d gates kept", n, len(s.gates))
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
			release, err := s.Acquire(ctx, groups)
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
	if len(s.gates) != 0 {
		t.Fatalf("%d gates kept after every release", len(s.gates))
	}
}

// TestAcquireCancelledReleasesWhatItHeld: a request waiting for its
// second gate gives up when its context ends, and gives back the first.
func TestAcquireCancelledReleasesWhatItHeld(t *testing.T) {
	var s Gates
	holdB, err := s.Acquire(context.Background(), []string{"b"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan error, 1)
	go func() {
		_, err := s.Acquire(ctx, []string{"a", "b"})
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
	relA, err := s.Acquire(context.Background(), []string{"a"}) // free again
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
	done := runAsync(&s, ctx, []string{"g"}, started, release, "first")
	<-started
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("run after its context ended: %v", err)
	}
	if s.Queued("g") != 1 {
		t.Fatalf("%d steps of g queued while the detached step runs, want 1", s.Queued("g"))
	}
	relNext := make(chan struct{})
	next := runAsync(&s, context.Background(), []string{"g"}, started, relNext, "next")
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
