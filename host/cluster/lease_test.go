package cluster_test

import (
	"testing"
	"time"

	"github.com/coordhost/coordhost/host/cluster"
)

func TestLeaseLifetime(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1000, 0)}
	l := cluster.NewLease(clk, 10*time.Second, 2*time.Second)
	if l.Valid() {
		t.Fatal("a lease never renewed is valid")
	}
	sent := clk.Now()
	clk.Advance(500 * time.Millisecond) // the heartbeat's round trip
	l.Renew(sent)
	if got := l.Remaining(); got != 7500*time.Millisecond {
		t.Fatalf("remaining after renewal = %v, want 7.5s (8s from the send)", got)
	}
	clk.Advance(7499 * time.Millisecond)
	if !l.Valid() {
		t.Fatal("lease expired before send + session - margin")
	}
	clk.Advance(time.Millisecond)
	if l.Valid() {
		t.Fatal("lease still valid at send + session - margin")
	}
}

// TestLeasePausePastExpiry: a node paused past its lease wakes with an
// expired lease, and an answer to a heartbeat sent before the pause does
// not bring it back past the old bound.
func TestLeasePausePastExpiry(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1000, 0)}
	l := cluster.NewLease(clk, 10*time.Second, 2*time.Second)
	l.Renew(clk.Now())
	before := clk.Now()
	clk.Advance(30 * time.Second) // the process is stopped (SIGSTOP, GC, VM pause)
	if l.Valid() {
		t.Fatal("lease valid after a pause longer than the session timeout")
	}
	l.Renew(before) // a late answer to the heartbeat sent before the pause
	if l.Valid() {
		t.Fatal("an old heartbeat renewed the lease")
	}
	l.Renew(clk.Now())
	if !l.Valid() {
		t.Fatal("a fresh heartbeat did not renew the lease")
	}
}

func TestLeaseDrop(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1000, 0)}
	l := cluster.NewLease(clk, 10*time.Second, time.Second)
	l.Renew(clk.Now())
	sent := clk.Now()
	clk.Advance(time.Millisecond)
	l.Drop()
	if l.Valid() || l.Remaining() != 0 {
		t.Fatal("dropped lease still valid")
	}
	l.Renew(sent) // answer to a heartbeat sent before the drop
	if l.Valid() {
		t.Fatal("a heartbeat sent before the drop renewed the lease")
	}
	clk.Advance(time.Millisecond)
	l.Renew(clk.Now())
	if !l.Valid() {
		t.Fatal("a heartbeat sent after the drop did not renew the lease")
	}
}
