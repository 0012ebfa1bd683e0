package interop

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupView is what one poll of DescribeGroups and StreamsGroupDescribe saw.
type groupView struct {
	at      time.Time
	kind    string // "classic", "streams" or "none"
	state   string // the group state as the coordinator names it
	members int
	epoch   int32 // streams group epoch, or classic generation
}

func (v groupView) String() string {
	if v.kind == "none" {
		return "none(" + v.state + ")"
	}
	return fmt.Sprintf("%s/%s/%d members/epoch %d", v.kind, v.state, v.members, v.epoch)
}

// observer polls one group through Kafka's describe APIs and records every
// change of group type, state or membership: the live view of conversions.
type observer struct {
	group string
	cl    *kgo.Client
	stop  chan struct{}
	done  chan struct{}

	mu      sync.Mutex
	changes []groupView
	errs    []string
}

// observe starts polling group on bootstrap every interval until close.
func observe(bootstrap, group string, interval time.Duration) (*observer, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		return nil, err
	}
	o := &observer{group: group, cl: cl, stop: make(chan struct{}), done: make(chan struct{})}
	go o.loop(interval)
	return o, nil
}

func (o *observer) close() {
	close(o.stop)
	<-o.done
	o.cl.Close()
}

func (o *observer) loop(interval time.Duration) {
	defer close(o.done)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		o.poll()
		select {
		case <-o.stop:
			return
		case <-tick.C:
		}
	}
}

func (o *observer) poll() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	v, err := o.describe(ctx)
	o.mu.Lock()
	defer o.mu.Unlock()
	if err != nil {
		if len(o.errs) < 50 {
			o.errs = append(o.errs, time.Now().Format("15:04:05.000 ")+err.Error())
		}
		return
	}
	if n := len(o.changes); n == 0 || !sameView(o.changes[n-1], v) {
		o.changes = append(o.changes, v)
	}
}

func sameView(a, b groupView) bool {
	return a.kind == b.kind && a.state == b.state && a.members == b.members && a.epoch == b.epoch
}

// describe asks StreamsGroupDescribe first (a streams group), then
// DescribeGroups (a classic group).
func (o *observer) describe(ctx context.Context) (groupView, error) {
	now := time.Now()
	sv, serr := o.describeStreams(ctx)
	if serr == nil && sv.kind == "streams" {
		sv.at = now
		return sv, nil
	}
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{o.group}
	resp, err := req.RequestWith(ctx, o.cl)
	if err != nil {
		return groupView{}, fmt.Errorf("DescribeGroups: %w", err)
	}
	if len(resp.Groups) != 1 {
		return groupView{}, fmt.Errorf("DescribeGroups: %d groups in answer", len(resp.Groups))
	}
	g := resp.Groups[0]
	if e := kerr.ErrorForCode(g.ErrorCode); e != nil || g.State == "Dead" {
		why := g.State
		if e != nil {
			why = e.Error()
		}
		if serr != nil {
			why += "; StreamsGroupDescribe: " + serr.Error()
		} else {
			why += "; StreamsGroupDescribe: " + sv.state
		}
		return groupView{at: now, kind: "none", state: why}, nil
	}
	return groupView{at: now, kind: "classic", state: g.State, members: len(g.Members)}, nil
}

// describeStreams sends StreamsGroupDescribe to the group's coordinator
// (kgo does not route this key by itself).
func (o *observer) describeStreams(ctx context.Context) (groupView, error) {
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = o.group
	fc.CoordinatorKeys = []string{o.group}
	fcr, err := fc.RequestWith(ctx, o.cl)
	if err != nil {
		return groupView{}, fmt.Errorf("FindCoordinator: %w", err)
	}
	node := fcr.NodeID
	if len(fcr.Coordinators) > 0 {
		c := fcr.Coordinators[0]
		if e := kerr.ErrorForCode(c.ErrorCode); e != nil {
			return groupView{}, fmt.Errorf("FindCoordinator: %w", e)
		}
		node = c.NodeID
	} else if e := kerr.ErrorForCode(fcr.ErrorCode); e != nil {
		return groupView{}, fmt.Errorf("FindCoordinator: %w", e)
	}
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{o.group}
	raw, err := o.cl.Broker(int(node)).Request(ctx, req)
	if err != nil {
		return groupView{}, fmt.Errorf("StreamsGroupDescribe: %w", err)
	}
	resp := raw.(*kmsg.StreamsGroupDescribeResponse)
	if len(resp.Groups) != 1 {
		return groupView{}, fmt.Errorf("StreamsGroupDescribe: %d groups in answer", len(resp.Groups))
	}
	g := resp.Groups[0]
	if e := kerr.ErrorForCode(g.ErrorCode); e != nil {
		return groupView{kind: "none", state: e.Error()}, nil
	}
	return groupView{kind: "streams", state: g.State, members: len(g.Members), epoch: g.Epoch}, nil
}

// history returns the recorded changes.
func (o *observer) history() []groupView {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]groupView{}, o.changes...)
}

// last is the latest view, or a zero view.
func (o *observer) last() groupView {
	h := o.history()
	if len(h) == 0 {
		return groupView{kind: "none", state: "not polled yet"}
	}
	return h[len(h)-1]
}

// waitFor polls the recorded views until ok holds for the latest one or d passes.
func (o *observer) waitFor(d time.Duration, what string, ok func(groupView) bool) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if ok(o.last()) {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("group %s: not %s within %v (last view: %v)", o.group, what, d, o.last())
}

// typeTransitions compresses the history within [from, to) to its group
// type changes, e.g. "classic→none→streams".
func typeTransitions(h []groupView, from, to time.Time) string {
	var kinds []string
	for _, v := range h {
		if v.at.Before(from) || !v.at.Before(to) {
			continue
		}
		if len(kinds) == 0 || kinds[len(kinds)-1] != v.kind {
			kinds = append(kinds, v.kind)
		}
	}
	if len(kinds) == 0 {
		return "-"
	}
	return strings.Join(kinds, "→")
}

// report is the full history and the describe errors, for failure output.
func (o *observer) report() string {
	var b strings.Builder
	for _, v := range o.history() {
		fmt.Fprintf(&b, "  %s %v\n", v.at.Format("15:04:05.000"), v)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, e := range o.errs {
		fmt.Fprintf(&b, "  error %s\n", e)
	}
	return b.String()
}
