package loop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host/assign"
	"github.com/coordhost/coordhost/host/offsets"
	"github.com/coordhost/coordhost/host/plugin"
	"github.com/coordhost/coordhost/host/wire"
)

// commitFate is what the fake data plane does with a forwarded commit.
type commitFate int

const (
	fateStored commitFate = iota // stored and answered
	// fateLate: the connection is lost before the answer; the write is
	// still queued in the data plane and lands before the group's next
	// request is served.
	fateLate
	fateLost // the connection is lost and nothing is written
)

var errConnLost = errors.New("connection to the data plane lost")

// fakePlane is an offsets store whose commits and reads tests hold and
// release: onCommit and onFetch run (and may block) before the request is
// served.
type fakePlane struct {
	onCommit func(req *kmsg.OffsetCommitRequest) commitFate
	onFetch  func(req *kmsg.OffsetFetchRequest)

	mu      sync.Mutex
	stored  map[string]int64 // group/topic/partition -> offset
	pending []*kmsg.OffsetCommitRequest
	writes  []string // member@offset, in the order the commits were stored
}

func offsetKey(group, topic string, p int32) string { return fmt.Sprintf("%s/%s/%d", group, topic, p) }

func (f *fakePlane) apply(req *kmsg.OffsetCommitRequest) {
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			f.stored[offsetKey(req.Group, t.Topic, p.Partition)] = p.Offset
			f.writes = append(f.writes, fmt.Sprintf("%s@%d", req.MemberID, p.Offset))
		}
	}
}

func (f *fakePlane) CommitOffsets(_ context.Context, req *kmsg.OffsetCommitRequest) (*kmsg.OffsetCommitResponse, error) {
	fate := fateStored
	if f.onCommit != nil {
		fate = f.onCommit(req)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch fate {
	case fateLate:
		f.pending = append(f.pending, req)
		return nil, errConnLost
	case fateLost:
		return nil, errConnLost
	}
	f.apply(req)
	return wire.ErrorResponse(req, 0).(*kmsg.OffsetCommitResponse), nil
}

func (f *fakePlane) FetchOffsets(_ context.Context, req *kmsg.OffsetFetchRequest) (*kmsg.OffsetFetchResponse, error) {
	if f.onFetch != nil {
		f.onFetch(req)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.pending { // queued writes are served first
		f.apply(w)
	}
	f.pending = nil
	resp := kmsg.NewPtrOffsetFetchResponse()
	resp.SetVersion(req.Version)
	for _, g := range req.Groups {
		rg := kmsg.NewOffsetFetchResponseGroup()
		rg.Group = g.Group
		for _, t := range g.Topics {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				rp.Partition, rp.Offset = p, -1
				if o, ok := f.stored[offsetKey(g.Group, t.Topic, p)]; ok {
					rp.Offset = o
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			rg.Topics = append(rg.Topics, rt)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}

func (f *fakePlane) TxnCommitOffsets(context.Context, *kmsg.TxnOffsetCommitRequest) (*kmsg.TxnOffsetCommitResponse, error) {
	return nil, errors.New("not used")
}

func (f *fakePlane) DeleteOffsets(context.Context, *kmsg.OffsetDeleteRequest) (*kmsg.OffsetDeleteResponse, error) {
	return nil, errors.New("not used")
}

func (f *fakePlane) offset(group string, p int32) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stored[offsetKey(group, "in", p)]
}

func (f *fakePlane) written() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.writes...)
}

// skewClock is the wall clock moved forward by skew (ms).
type skewClock struct{ skew atomic.Int64 }

func (c *skewClock) now() time.Time {
	return time.Now().Add(time.Duration(c.skew.Load()) * time.Millisecond)
}

// gateLoop is a one-partition loop (every group on the same partition)
// over a real core on clock, storing offsets in fake.
func gateLoop(t *testing.T, fake *fakePlane, clock *skewClock) *Loop {
	t.Helper()
	cfg := core.DefaultConfig()
	cfg.Streams.InitialRebalanceDelayMs, cfg.Streams.AssignmentIntervalMs = 0, 0
	c, err := core.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Step(time.Now().UnixMilli(), core.Topics{Topics: []core.TopicMetadata{{Name: "in", ID: [16]byte{1}, Partitions: 4}}})
	c.Commit()
	log := slog.New(slog.DiscardHandler)
	asg := assign.New(context.Background(), t.TempDir(), "sticky", plugin.Config{}, log)
	l, err := newLoop(context.Background(), Deps{Core: c, Assignors: asg, Log: log}, clock.now)
	if err != nil {
		t.Fatal(err)
	}
	l.offs.plane = fake
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = l.Shutdown(ctx)
	})
	return l
}

func handleReq(t *testing.T, l *Loop, body kmsg.Request) kmsg.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := l.Handle(ctx, &wire.Request{Key: body.Key(), Version: body.GetVersion(), Body: body})
	if err != nil {
		t.Errorf("%s: %v", kmsg.NameForKey(body.Key()), err)
	}
	return resp
}

func streamsHeartbeat(t *testing.T, l *Loop, group, member string, epoch int32, active []kmsg.TaskIDs) *kmsg.StreamsGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = group, member, epoch
	if epoch == 0 {
		proc := "p-" + member
		req.RebalanceTimeoutMillis, req.ProcessID = 30000, &proc
		req.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
			{SubtopologyID: "0", SourceTopics: []string{"in"}}}}
	}
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = append([]kmsg.TaskIDs{}, active...), []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	resp, _ := handleReq(t, l, req).(*kmsg.StreamsGroupHeartbeatResponse)
	if resp == nil || resp.ErrorCode != 0 {
		t.Fatalf("heartbeat of %s/%s: %+v", group, member, resp)
	}
	return resp
}

// ownAll heartbeats member into group until it owns the 4 tasks and
// returns its epoch.
func ownAll(t *testing.T, l *Loop, group, member string) int32 {
	t.Helper()
	var active []kmsg.TaskIDs
	epoch := int32(0)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		resp := streamsHeartbeat(t, l, group, member, epoch, active)
		epoch = resp.MemberEpoch
		if resp.ActiveTasks != nil {
			active = resp.ActiveTasks
		}
		if countAll(active) == 4 {
			return epoch
		}
	}
	t.Fatalf("%s never owned the 4 tasks of %s", member, group)
	return 0
}

func countAll(ts []kmsg.TaskIDs) int {
	n := 0
	for _, t := range ts {
		n += len(t.Partitions)
	}
	return n
}

func leave(t *testing.T, l *Loop, group, member string) {
	t.Helper()
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = group, member, -1
	if resp, _ := handleReq(t, l, req).(*kmsg.StreamsGroupHeartbeatResponse); resp == nil || resp.ErrorCode != 0 {
		t.Fatalf("leave of %s: %+v", member, resp)
	}
}

func commitReq(group, member string, epoch int32, offset int64) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 9
	req.Group, req.MemberID, req.Generation = group, member, epoch
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = "in"
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset = 0, offset
	t.Partitions = []kmsg.OffsetCommitRequestTopicPartition{p}
	req.Topics = []kmsg.OffsetCommitRequestTopic{t}
	return req
}

func commitCode(resp kmsg.Response) int16 {
	r, ok := resp.(*kmsg.OffsetCommitResponse)
	if !ok || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		return -100
	}
	return r.Topics[0].Partitions[0].ErrorCode
}

// commitAsync sends an OffsetCommit and returns where its answer's code
// arrives.
func commitAsync(t *testing.T, l *Loop, req *kmsg.OffsetCommitRequest) <-chan int16 {
	out := make(chan int16, 1)
	go func() { out <- commitCode(handleReq(t, l, req)) }()
	return out
}

// waitBehind waits until a second offset step of group waits at its gate,
// and fails if instead a commit of group reaches the data plane.
func waitBehind(t *testing.T, l *Loop, group string, entered <-chan string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); l.offs.Queued(group) != 2; time.Sleep(time.Millisecond) {
		select {
		case m := <-entered:
			t.Fatalf("%s's commit reached the data plane while an earlier forward of %s is unsettled", m, group)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d offset steps of %s queued, want 2", l.offs.Queued(group), group)
		}
	}
}

// holdCommits makes fake hold the commits of group: each signals entered
// and waits for a value on release, which is its fate.
func holdCommits(fake *fakePlane, group string) (entered chan string, release chan commitFate) {
	entered, release = make(chan string, 4), make(chan commitFate)
	fake.onCommit = func(req *kmsg.OffsetCommitRequest) commitFate {
		if req.Group != group {
			return fateStored
		}
		entered <- req.MemberID
		return <-release
	}
	return entered, release
}

// heldCommit is a loop whose data plane holds the commits of group g,
// with member A owning g's tasks and A's commit of offset 10 passed by
// core and held in the data plane.
type heldCommit struct {
	l       *Loop
	clock   *skewClock
	fake    *fakePlane
	entered chan string
	release chan commitFate
	epochA  int32
	doneA   <-chan int16
}

func startHeldCommit(t *testing.T) *heldCommit {
	t.Helper()
	h := &heldCommit{fake: &fakePlane{stored: map[string]int64{}}, clock: &skewClock{}}
	h.l = gateLoop(t, h.fake, h.clock)
	h.entered, h.release = holdCommits(h.fake, "g")
	h.epochA = ownAll(t, h.l, "g", "A")
	h.doneA = commitAsync(t, h.l, commitReq("g", "A", h.epochA, 10))
	if m := <-h.entered; m != "A" {
		t.Fatalf("first forward from %s, want A", m)
	}
	return h
}

// TestFencedMembersCommitNeverLandsLast: member A's commit passes core's
// check and its forward is held in the data plane; while it is held A is
// fenced (it leaves, or its session expires) and B joins and takes every
// task; B commits. B's commit waits for A's forward, so the data plane
// stores A's offset and then B's, and the group's offset is B's. A's next
// commit is refused.
func TestFencedMembersCommitNeverLandsLast(t *testing.T) {
	for _, fence := range []string{"leave", "session-expiry"} {
		t.Run(fence, func(t *testing.T) {
			h := startHeldCommit(t)
			l, fake, entered, release := h.l, h.fake, h.entered, h.release
			if fence == "leave" {
				leave(t, l, "g", "A")
			} else { // past A's session; B's first heartbeat ends in the timer that expires A
				h.clock.skew.Add(int64(core.DefaultConfig().Streams.SessionTimeoutMs) + 1000)
			}
			epochB := ownAll(t, l, "g", "B")
			doneB := commitAsync(t, l, commitReq("g", "B", epochB, 20))
			waitBehind(t, l, "g", entered) // B waits at the gate behind A's forward
			if w := fake.written(); len(w) != 0 {
				t.Fatalf("written while A's forward is held: %v", w)
			}
			release <- fateStored
			if code := <-h.doneA; code != 0 {
				t.Errorf("A's allowed commit answered %v", kerr.ErrorForCode(code))
			}
			if m := <-entered; m != "B" {
				t.Fatalf("second forward from %s, want B", m)
			}
			release <- fateStored
			if code := <-doneB; code != 0 {
				t.Errorf("B's commit answered %v", kerr.ErrorForCode(code))
			}
			if w := fake.written(); len(w) != 2 || w[0] != "A@10" || w[1] != "B@20" {
				t.Errorf("writes %v, want [A@10 B@20]", w)
			}
			if got := fake.offset("g", 0); got != 20 {
				t.Errorf("offset of g/in/0 is %d, want B's 20", got)
			}
			if code := commitCode(handleReq(t, l, commitReq("g", "A", h.epochA, 30))); code != kerr.UnknownMemberID.Code {
				t.Errorf("fenced A's commit answered %v, want UNKNOWN_MEMBER_ID", kerr.ErrorForCode(code))
			}
		})
	}
}

// TestUnknownOutcomeHoldsTheGroup: A's forward loses its connection, so
// its outcome is unknown; the group's next commit (B's, after A is fenced)
// waits until a read of the data plane has been answered. When A's write
// was still queued in the data plane, the read shows it, A is answered
// success and B's offset is stored after it; when nothing was written, A
// is answered COORDINATOR_NOT_AVAILABLE. Either way the offset is B's.
func TestUnknownOutcomeHoldsTheGroup(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fate   commitFate
		codeA  int16
		writes []string
	}{
		{"written-late", fateLate, 0, []string{"A@10", "B@20"}},
		{"lost", fateLost, kerr.CoordinatorNotAvailable.Code, []string{"B@20"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startHeldCommit(t)
			l, fake, entered, release := h.l, h.fake, h.entered, h.release
			readBack, answerRead := make(chan struct{}, 1), make(chan struct{})
			fake.onFetch = func(*kmsg.OffsetFetchRequest) {
				readBack <- struct{}{}
				<-answerRead
			}
			release <- tc.fate
			<-readBack // A's forward failed; its outcome is being read back

			leave(t, l, "g", "A")
			epochB := ownAll(t, l, "g", "B")
			doneB := commitAsync(t, l, commitReq("g", "B", epochB, 20))
			waitBehind(t, l, "g", entered)
			if w := fake.written(); len(w) != 0 {
				t.Fatalf("written before A's outcome is known: %v", w)
			}
			fake.onFetch = nil
			close(answerRead)
			if code := <-h.doneA; code != tc.codeA {
				t.Errorf("A answered %v, want %v", kerr.ErrorForCode(code), kerr.ErrorForCode(tc.codeA))
			}
			<-entered
			release <- fateStored
			if code := <-doneB; code != 0 {
				t.Errorf("B answered %v", kerr.ErrorForCode(code))
			}
			if w := fake.written(); fmt.Sprint(w) != fmt.Sprint(tc.writes) {
				t.Errorf("writes %v, want %v", w, tc.writes)
			}
			if got := fake.offset("g", 0); got != 20 {
				t.Errorf("offset of g/in/0 is %d, want B's 20", got)
			}
		})
	}
}

// TestSlowForwardDelaysNoOtherGroup: while a commit of group g is held in
// the data plane, a group h on the same partition joins, heartbeats and
// commits, each answered.
func TestSlowForwardDelaysNoOtherGroup(t *testing.T) {
	h := startHeldCommit(t)
	l, fake, release := h.l, h.fake, h.release

	if l.rt.PartitionFor("g") != l.rt.PartitionFor("h") {
		t.Fatal("g and h are on different partitions")
	}
	epochH := ownAll(t, l, "h", "H")
	streamsHeartbeat(t, l, "h", "H", epochH, nil)
	if code := commitCode(handleReq(t, l, commitReq("h", "H", epochH, 7))); code != 0 {
		t.Errorf("h's commit answered %v", kerr.ErrorForCode(code))
	}
	if got := fake.offset("h", 0); got != 7 {
		t.Errorf("offset of h/in/0 is %d, want 7", got)
	}
	select {
	case code := <-h.doneA:
		t.Fatalf("g's held commit answered %v before its forward was released", kerr.ErrorForCode(code))
	default:
	}
	release <- fateStored
	if code := <-h.doneA; code != 0 {
		t.Errorf("g's commit answered %v", kerr.ErrorForCode(code))
	}
}

func fetchReq(group string, partitions ...int32) *kmsg.OffsetFetchRequest {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = group
	t := kmsg.NewOffsetFetchRequestGroupTopic()
	t.Topic, t.Partitions = "in", partitions
	g.Topics = []kmsg.OffsetFetchRequestGroupTopic{t}
	req.Groups = []kmsg.OffsetFetchRequestGroup{g}
	return req
}

// fetchAsync sends an OffsetFetch of one partition and returns where its
// answer's offset arrives (-100: no single partition answered).
func fetchAsync(t *testing.T, l *Loop, group string, partition int32) <-chan int64 {
	out := make(chan int64, 1)
	go func() {
		r, _ := handleReq(t, l, fetchReq(group, partition)).(*kmsg.OffsetFetchResponse)
		if r == nil || len(r.Groups) != 1 || len(r.Groups[0].Topics) != 1 || len(r.Groups[0].Topics[0].Partitions) != 1 {
			out <- -100
			return
		}
		out <- r.Groups[0].Topics[0].Partitions[0].Offset
	}()
	return out
}

// TestHeldCommitHoldsItsPartitionsOnly: while A's commit of partition 0
// is held in the data plane, a fetch and a commit of partition 1 of the
// same group are answered (as on Kafka, one partition's commit does not
// hold another's), while a fetch of partition 0 and a fetch of every
// offset of the group wait for the held commit and read its offset.
func TestHeldCommitHoldsItsPartitionsOnly(t *testing.T) {
	h := startHeldCommit(t)
	l, release := h.l, h.release
	select {
	case got := <-fetchAsync(t, l, "g", 1):
		if got != -1 {
			t.Errorf("fetch of partition 1 answered offset %d, want -1", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a fetch of partition 1 waited for a held commit of partition 0")
	}
	hold := h.fake.onCommit // read before A's commit signalled entered
	h.fake.onCommit = func(req *kmsg.OffsetCommitRequest) commitFate {
		if req.Topics[0].Partitions[0].Partition == 1 {
			return fateStored
		}
		return hold(req)
	}
	other := commitReq("g", "A", h.epochA, 7)
	other.Topics[0].Partitions[0].Partition = 1
	select {
	case code := <-commitAsync(t, l, other):
		if code != 0 {
			t.Errorf("commit of partition 1 answered %v", kerr.ErrorForCode(code))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a commit of partition 1 waited for a held commit of partition 0")
	}
	if got := h.fake.offset("g", 1); got != 7 {
		t.Errorf("offset of g/in/1 is %d, want 7", got)
	}

	fetch0 := fetchAsync(t, l, "g", 0)
	all := kmsg.NewPtrOffsetFetchRequest()
	all.Version = 8
	all.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g"}} // every offset of the group
	fetchAll := make(chan struct{})
	go func() { handleReq(t, l, all); close(fetchAll) }()
	for deadline := time.Now().Add(10 * time.Second); l.offs.Queued("g") != 3; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d offset steps of g queued, want 3 (the held commit and two fetches behind it)", l.offs.Queued("g"))
		}
	}
	select {
	case got := <-fetch0:
		t.Fatalf("a fetch of partition 0 answered %d while a commit of it is held", got)
	case <-fetchAll:
		t.Fatal("a fetch of the whole group answered while a commit of it is held")
	case <-time.After(50 * time.Millisecond):
	}
	release <- fateStored
	if code := <-h.doneA; code != 0 {
		t.Errorf("A's commit answered %v", kerr.ErrorForCode(code))
	}
	if got := <-fetch0; got != 10 {
		t.Errorf("fetch of partition 0 after the held commit answered %d, want 10", got)
	}
	<-fetchAll
}

// namingPlane is a fakePlane that knows topic names by id, as the data
// plane does from its last metadata.
type namingPlane struct {
	*fakePlane
	names map[[16]byte]string
}

func (p namingPlane) KnownTopicName(id [16]byte) string { return p.names[id] }

// TestClaimsNameTopicsAsTheOffsetsLogDoes: a commit's place in its
// group's queue is its partitions under the topic's name whether the
// request names the topic by name or by id, so the two order against
// each other; a topic id the plane cannot name without asking, and a
// fetch of every offset, claim the whole group.
func TestClaimsNameTopicsAsTheOffsetsLogDoes(t *testing.T) {
	fake := &fakePlane{stored: map[string]int64{}}
	l := gateLoop(t, fake, &skewClock{})
	byName := commitReq("g", "A", 1, 10)
	byID := commitReq("g", "A", 1, 10)
	byID.Version, byID.Topics[0].Topic, byID.Topics[0].TopicID = 10, "", [16]byte{1}
	in0 := []offsets.Claim{{Group: "g", Parts: []offsets.Part{{Topic: "in", Partition: 0}}}}
	if got := l.commitClaim(byName); !reflect.DeepEqual(got, in0) {
		t.Errorf("by-name commit claims %+v, want %+v", got, in0)
	}
	if got := l.commitClaim(byID); !reflect.DeepEqual(got, offsets.Whole("g")) {
		t.Errorf("by-id commit on a plane that cannot name ids claims %+v, want the whole group", got)
	}
	l.offs.plane = namingPlane{fake, map[[16]byte]string{{1}: "in"}}
	if got := l.commitClaim(byID); !reflect.DeepEqual(got, in0) {
		t.Errorf("by-id commit claims %+v, want %+v", got, in0)
	}
	byID.Topics[0].TopicID = [16]byte{2}
	if got := l.commitClaim(byID); !reflect.DeepEqual(got, offsets.Whole("g")) {
		t.Errorf("commit of an unnamed topic id claims %+v, want the whole group", got)
	}
	if got := l.fetchClaims(fetchReq("g", 0)); !reflect.DeepEqual(got, in0) {
		t.Errorf("fetch of in/0 claims %+v, want %+v", got, in0)
	}
	all := kmsg.NewPtrOffsetFetchRequest()
	all.Version = 8
	all.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g"}, {Group: "h"}}
	if got := l.fetchClaims(all); !reflect.DeepEqual(got, offsets.Whole("g", "h")) {
		t.Errorf("fetch of every offset of g and h claims %+v, want both whole", got)
	}
}

// TestDeleteGroupsWaitsForAHeldCommit: A's allowed commit is held in the
// data plane, A leaves, and the group is deleted: the deletion waits for
// the held commit, so the commit never lands after the group's offsets
// are deleted.
func TestDeleteGroupsWaitsForAHeldCommit(t *testing.T) {
	h := startHeldCommit(t)
	leave(t, h.l, "g", "A")
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Version, del.Groups = 2, []string{"g"}
	deleted := make(chan kmsg.Response, 1)
	go func() { deleted <- handleReq(t, h.l, del) }()
	for deadline := time.Now().Add(10 * time.Second); h.l.offs.Queued("g") != 2; time.Sleep(time.Millisecond) {
		select {
		case r := <-deleted:
			t.Fatalf("DeleteGroups answered %+v while a commit of the group is held", r)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d offset steps of g queued, want 2 (the held commit and the deletion)", h.l.offs.Queued("g"))
		}
	}
	h.release <- fateStored
	if code := <-h.doneA; code != 0 {
		t.Errorf("A's commit answered %v", kerr.ErrorForCode(code))
	}
	r, _ := (<-deleted).(*kmsg.DeleteGroupsResponse)
	if r == nil || len(r.Groups) != 1 || r.Groups[0].ErrorCode != 0 {
		t.Fatalf("DeleteGroups answered %+v, want g deleted", r)
	}
}
