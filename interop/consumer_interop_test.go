package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coordhost/coordhost/abi"
	uniform "github.com/coordhost/coordhost/plugins/assignor-uniform"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The KIP-848 side-by-side scenario: one consumer group of real Java
// KafkaConsumer 4.4 instances (group.protocol=consumer, interop/consumer-app),
// franz-go KIP-848 consumers and one scripted member speaking
// ConsumerGroupHeartbeat directly, run once against the real broker and
// once through coordhost in front of it, with the same script. Each step
// records the error codes it got and the settled assignment; both sides
// must agree step by step.
//
// The assignment is compared as the sorted list of partition counts per
// member, completeness (every subscribed partition held by exactly one
// member) and, member by member, against the uniform assignor run on the
// side's own members (below, "Member by member"): members name themselves
// with random UUIDs and Kafka's uniform assignor breaks ties in the hash
// order of their ids, so which client gets which partition differs
// between any two runs, even on the same coordinator. The regex member's
// partitions are compared exactly, as it is the only subscriber of its
// topics.

const (
	cgTopic   = "cg-in"
	cgParts   = 6
	cgAppDir  = "consumer-app"
	cgAppMain = "io.coordhost.interop.consumer.ConsumerApp"
	cgSettle  = 60 * time.Second
)

// cgStep is the outcome of one scripted step on one side.
type cgStep struct {
	Name     string
	Codes    []string // error names of the step's scripted requests, in order
	Counts   []int    // partitions per member, descending
	Complete bool
	Detail   string // step-specific, comparable across sides
}

func (s cgStep) String() string {
	return fmt.Sprintf("%s codes=%v counts=%v complete=%v %s", s.Name, s.Codes, s.Counts, s.Complete, s.Detail)
}

// TestInteropConsumerSideBySide runs the scenario against the real broker
// and through coordhost in front of it and compares every step.
func TestInteropConsumerSideBySide(t *testing.T) {
	needInterop(t)
	start := time.Now()
	dir := logDir(t)
	b := startBroker(t, dir)
	ch := startCoordhost(t, dir, b.addr)
	if err := groupsServed(ch.addr, "interop-probe", 30*time.Second); err != nil {
		t.Fatalf("coordhost: %v\n%s", err, ch.proc.tail(60))
	}
	admin, err := kgo.NewClient(kgo.SeedBrokers(b.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	createTopics(t, admin, cgParts, cgTopic)
	produceN(t, admin, cgTopic, 0, 60)
	classpath(t, cgAppDir) // build before the clock of either side starts

	// Answers where Kafka 4.4 and coordhost once differed (differences_test.go).
	t.Run("differences", func(t *testing.T) { testKafkaDifferences(t, dir, b.addr, ch.addr) })

	// The sides run at once, each with its own group and topics.
	var kafka, through []cgStep
	t.Run("sides", func(t *testing.T) {
		t.Run("kafka", func(t *testing.T) {
			t.Parallel()
			kafka = runConsumerScript(t, dir, "kafka", b.addr, admin)
		})
		t.Run("coordhost", func(t *testing.T) {
			t.Parallel()
			through = runConsumerScript(t, dir, "coordhost", ch.addr, admin)
		})
	})
	if t.Failed() {
		return
	}
	if len(kafka) != len(through) {
		t.Fatalf("kafka ran %d steps, coordhost %d", len(kafka), len(through))
	}
	for i := range kafka {
		t.Logf("kafka:     %v", kafka[i])
		t.Logf("coordhost: %v", through[i])
		if !strings.Contains(kafka[i].Detail, "uniform=ok") {
			t.Errorf("step %s: the broker's assignment is not the uniform assignor's on its members and previous assignment: %s", kafka[i].Name, kafka[i].Detail)
		}
		if kafka[i].String() != through[i].String() {
			t.Errorf("step %s differs:\n kafka:     %v\n coordhost: %v", kafka[i].Name, kafka[i], through[i])
		}
	}
	t.Logf("side-by-side consumer scenario took %v", time.Since(start).Round(time.Second))
}

// cgSide is one side's run: its clients and the coordinator's address.
type cgSide struct {
	t       *testing.T
	name    string
	addr    string
	group   string
	admin   *kgo.Client // to the data plane
	spread  *kgo.Client // to the data plane, records to the partition they name
	desc    *kgo.Client // to the side's coordinator
	java    *proc
	kgos    map[string]*kgo.Client
	topics  map[string]int32 // subscribed topics and their partition counts
	scripts *scriptedMember
	prev    cgAssignment  // the last step's settled assignment
	table   memberHistory // the coordinator's member map before the step
	// stepStart is when the current step began (for the log).
	stepStart time.Time
}

// runConsumerScript runs the scenario on the coordinator at addr (a
// broker or coordhost) with a group and regex topics of its own.
func runConsumerScript(t *testing.T, dir, name, addr string, admin *kgo.Client) []cgStep {
	t.Helper()
	desc, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer desc.Close()
	// Records keyed as produceN keys them reach only some partitions of a
	// topic (k0..k6 miss cg-in-2), so a member owning only such a
	// partition would have nothing to commit: each step writes to every
	// partition by number.
	spread, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer spread.Close()
	s := &cgSide{t: t, name: name, addr: addr, group: "cg-" + name, admin: admin, spread: spread, desc: desc,
		kgos: map[string]*kgo.Client{}, topics: map[string]int32{cgTopic: cgParts}, stepStart: time.Now()}
	if err := groupsServed(addr, s.group, cgSettle); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	s.java = startJavaFrom(t, cgAppDir, "consumer-app-"+name, dir, cgAppMain, addr)
	defer func() {
		fmt.Fprintln(s.java.in, "exit")
		_ = s.java.stop(30 * time.Second)
		for _, cl := range s.kgos {
			cl.Close()
		}
	}()
	var steps []cgStep

	// 1. Everyone joins, one at a time (so that both sides' assignor runs
	// see the same members in the same order): two Java consumers, two
	// kgo consumers, the scripted member.
	s.startJava("j1", "topics:"+cgTopic)
	steps = append(steps, s.settle("join-j1", 1, nil))
	s.startJava("j2", "topics:"+cgTopic)
	steps = append(steps, s.settle("join-j2", 2, nil))
	s.startKgo("k1")
	steps = append(steps, s.settle("join-k1", 3, nil))
	s.startKgo("k2")
	steps = append(steps, s.settle("join-k2", 4, nil))
	s.scripts = newScriptedMember(t, addr, s.group, name+"-scripted-member")
	steps = append(steps, s.settle("join", 5, []string{s.scripts.join()}))

	// 2. Fencing: stale epochs on commits, fetches and heartbeats.
	steps = append(steps, s.settle("fencing", 5, s.scripts.fencing()))

	// 3. A Java consumer leaves; 4. a kgo consumer joins.
	fmt.Fprintln(s.java.in, "stop j2")
	if _, _, err := s.java.waitLine(`{"client":"j2","event":"closed"`, 0, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	steps = append(steps, s.settle("java-leaves", 4, nil))
	s.startKgo("k3")
	steps = append(steps, s.settle("kgo-joins", 5, nil))

	// 5. The scripted member leaves with epoch -1.
	steps = append(steps, s.settle("scripted-leaves", 4, []string{s.scripts.leave()}))

	// 6. A Java consumer subscribes with a broker-side regex to topics
	// only it reads; 7. a new matching topic is created.
	rx := name + "-rx-"
	createTopics(t, s.admin, 2, rx+"a", rx+"b")
	createTopics(t, s.admin, 1, name+"-other")
	s.topics[rx+"a"], s.topics[rx+"b"] = 2, 2
	s.startJava("j3", "pattern:"+rx+".*")
	steps = append(steps, s.settle("regex-joins", 5, nil))
	createTopics(t, s.admin, 2, rx+"c")
	s.topics[rx+"c"] = 2
	steps = append(steps, s.settle("regex-new-topic", 5, nil))
	s.checkJavaCommits("j1", "j3")
	return steps
}

// checkJavaCommits: no Java poll loop failed, and each named consumer
// committed what it polled at least once; failed commits (a commit racing
// a rebalance may be refused) are logged, not compared.
func (s *cgSide) checkJavaCommits(names ...string) {
	s.t.Helper()
	if errs := s.java.grep(`"event":"error"`); len(errs) > 0 {
		s.t.Fatalf("%s: Java consumers failed: %v", s.name, errs)
	}
	for _, name := range names {
		deadline := time.Now().Add(cgSettle)
		for len(s.java.grep(`"client":"`+name+`","event":"commit","records"`)) == 0 || !s.committedOK(name) {
			if time.Now().After(deadline) {
				s.t.Fatalf("%s: Java consumer %s committed nothing\n%s", s.name, name, s.java.tail(30))
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	if failed := s.java.grep(`"event":"commit"`); len(failed) > 0 {
		n := 0
		for _, l := range failed {
			if !strings.Contains(l, `"error":null`) {
				n++
				s.t.Logf("%s: %s", s.name, l)
			}
		}
		s.t.Logf("%s: %d Java commits, %d refused", s.name, len(failed), n)
	}
}

func (s *cgSide) committedOK(name string) bool {
	for _, l := range s.java.grep(`"client":"` + name + `","event":"commit"`) {
		if strings.Contains(l, `"error":null`) {
			return true
		}
	}
	return false
}

func (s *cgSide) startJava(name, subscription string) {
	fmt.Fprintf(s.java.in, "start %s %s %s\n", name, s.group, subscription)
}

func (s *cgSide) startKgo(name string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.addr), kgo.ClientID(name), kgo.ConsumerGroup(s.group),
		kgo.ConsumeTopics(cgTopic), kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		s.t.Fatal(err)
	}
	s.kgos[name] = cl
	go func() {
		for {
			if fs := cl.PollFetches(context.Background()); fs.IsClientClosed() {
				return
			}
		}
	}()
}

// settle waits until the group is stable with n members holding every
// subscribed partition exactly once (each Java consumer's own view equal
// to the coordinator's), and records the step.
func (s *cgSide) settle(step string, n int, codes []string) cgStep {
	s.t.Helper()
	deadline := time.Now().Add(cgSettle)
	var last string
	for time.Now().Before(deadline) {
		g, err := s.describe()
		if err != nil {
			last = err.Error()
		} else if why := s.unsettled(g, n); why != "" {
			last = why
		} else {
			s.t.Logf("%s: step %s settled %v after it started", s.name, step, time.Since(s.stepStart).Round(100*time.Millisecond))
			s.stepStart = time.Now()
			out := cgStep{Name: step, Codes: codes, Complete: true,
				Detail: s.regexDetail(g) + " " + s.uniformCheck(g, s.prev, step == "regex-joins")}
			s.prev = assignmentOf(g)
			for _, m := range g.Members {
				c := 0
				for _, tp := range m.Assignment.TopicPartitions {
					c += len(tp.Partitions)
				}
				out.Counts = append(out.Counts, c)
			}
			sort.Sort(sort.Reverse(sort.IntSlice(out.Counts)))
			for topic, parts := range s.topics { // gives the members something to commit
				s.producePerPartition(topic, parts, 2)
			}
			return out
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.t.Fatalf("%s: step %s (codes %v) did not settle within %v: %s\n%s", s.name, step, codes, cgSettle, last, s.java.tail(30))
	return cgStep{}
}

// producePerPartition writes n records to each of topic's parts
// partitions.
func (s *cgSide) producePerPartition(topic string, parts int32, n int) {
	s.t.Helper()
	var rs []*kgo.Record
	for p := int32(0); p < parts; p++ {
		for i := 0; i < n; i++ {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("%d,%d", i, time.Now().UnixMilli()))})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.spread.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		s.t.Fatal(err)
	}
}

func (s *cgSide) describe() (kmsg.ConsumerGroupDescribeResponseGroup, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{s.group}
	resp, err := req.RequestWith(ctx, s.desc)
	if err != nil {
		return kmsg.ConsumerGroupDescribeResponseGroup{}, err
	}
	g := resp.Groups[0]
	return g, kerr.ErrorForCode(g.ErrorCode)
}

// unsettled says why g is not yet settled with n members ("" when it is).
func (s *cgSide) unsettled(g kmsg.ConsumerGroupDescribeResponseGroup, n int) string {
	if g.State != "Stable" || len(g.Members) != n || g.AssignmentEpoch != g.Epoch {
		var clients []string
		for _, m := range g.Members {
			clients = append(clients, m.ClientID)
		}
		return fmt.Sprintf("state %s, members %v (want %d), epoch %d, assignment epoch %d", g.State, clients, n, g.Epoch, g.AssignmentEpoch)
	}
	held := map[string]int{}
	for _, m := range g.Members {
		mine := tpNames(m.Assignment)
		if m.MemberEpoch != g.Epoch || !slices.Equal(mine, tpNames(m.TargetAssignment)) {
			return fmt.Sprintf("member %s (%s) not reconciled", m.MemberID, m.ClientID)
		}
		for _, tp := range mine {
			held[tp]++
		}
		if strings.HasPrefix(m.ClientID, "j") {
			if own := s.javaView(m.ClientID); !slices.Equal(own, mine) {
				return fmt.Sprintf("java %s reports %v, coordinator %v", m.ClientID, own, mine)
			}
		}
	}
	for topic, parts := range s.topics {
		for p := int32(0); p < parts; p++ {
			if c := held[fmt.Sprintf("%s-%d", topic, p)]; c != 1 {
				return fmt.Sprintf("%s-%d held by %d members", topic, p, c)
			}
		}
	}
	if len(held) != s.partitionCount() {
		return fmt.Sprintf("%d partitions held, %d subscribed", len(held), s.partitionCount())
	}
	return ""
}

func (s *cgSide) partitionCount() int {
	n := 0
	for _, p := range s.topics {
		n += int(p)
	}
	return n
}

// regexDetail names the regex member's subscription and partitions with
// the side's prefix removed, and counts partitions of regex topics held
// by other members.
func (s *cgSide) regexDetail(g kmsg.ConsumerGroupDescribeResponseGroup) string {
	var b strings.Builder
	others := 0
	for _, m := range g.Members {
		names := tpNames(m.Assignment)
		if m.SubscribedTopicRegex == nil {
			b.WriteString("regex=<null> ")
		} else if *m.SubscribedTopicRegex != "" {
			fmt.Fprintf(&b, "regex=%s holds=%v ", strings.TrimPrefix(*m.SubscribedTopicRegex, s.name),
				strings.ReplaceAll(fmt.Sprint(names), s.name, ""))
			continue
		}
		for _, n := range names {
			if !strings.HasPrefix(n, cgTopic) {
				others++
			}
		}
	}
	fmt.Fprintf(&b, "regex-topics-elsewhere=%d", others)
	return b.String()
}

func tpNames(a kmsg.Assignment) []string {
	var out []string
	for _, tp := range a.TopicPartitions {
		for _, p := range tp.Partitions {
			out = append(out, fmt.Sprintf("%s-%d", tp.Topic, p))
		}
	}
	sort.Strings(out)
	return out
}

// javaView is the last assignment the Java consumer name reported.
func (s *cgSide) javaView(name string) []string {
	lines := s.java.grep(`"client":"` + name + `","event":"assigned"`)
	if len(lines) == 0 {
		return nil
	}
	var ev struct{ Partitions []string }
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &ev); err != nil {
		s.t.Fatalf("consumer-app line %q: %v", lines[len(lines)-1], err)
	}
	if len(ev.Partitions) == 0 {
		return nil
	}
	return ev.Partitions
}

// scriptedMember is a KIP-848 member driven by hand over one connection:
// it heartbeats every 200 ms in the background, acknowledging what it was
// assigned, between the script's own requests.
type scriptedMember struct {
	t     *testing.T
	mu    sync.Mutex
	c     *rawConn
	group string
	id    string
	epoch int32
	owned []kmsg.ConsumerGroupHeartbeatRequestTopic
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
}

func newScriptedMember(t *testing.T, addr, group, id string) *scriptedMember {
	m := &scriptedMember{t: t, c: dialKafka(t, addr), group: group, id: id, stop: make(chan struct{}), done: make(chan struct{})}
	t.Cleanup(func() { m.once.Do(func() { close(m.stop) }) }) // a failed script stops the heartbeats too
	return m
}

func (m *scriptedMember) heartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	r, err := m.c.do(req)
	if err != nil { // the script goes on; the error code stands out in the step
		resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
		resp.ErrorCode, resp.ErrorMessage = -1, kmsg.StringPtr(err.Error())
		return resp
	}
	return r.(*kmsg.ConsumerGroupHeartbeatResponse)
}

func (m *scriptedMember) request(epoch int32) *kmsg.ConsumerGroupHeartbeatRequest {
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.SetVersion(1)
	r.Group, r.MemberID, r.MemberEpoch, r.RebalanceTimeoutMillis = m.group, m.id, epoch, -1
	r.Topics = m.owned
	return r
}

// join joins with a subscription to cgTopic, retrying while the
// coordinator is still loading (as clients do), and starts the heartbeats.
func (m *scriptedMember) join() string {
	deadline := time.Now().Add(cgSettle)
	for {
		resp := m.heartbeat(consumerJoin(m.group, m.id, cgTopic))
		switch kerr.ErrorForCode(resp.ErrorCode) {
		case kerr.NotCoordinator, kerr.CoordinatorLoadInProgress, kerr.CoordinatorNotAvailable:
			if time.Now().Before(deadline) {
				time.Sleep(200 * time.Millisecond)
				continue
			}
		}
		code := m.apply(resp)
		go m.loop()
		return code
	}
}

func (m *scriptedMember) apply(resp *kmsg.ConsumerGroupHeartbeatResponse) string {
	if resp.ErrorCode != 0 {
		return errName(resp.ErrorCode)
	}
	m.epoch = resp.MemberEpoch
	if a := resp.Assignment; a != nil {
		m.owned = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		for _, tp := range a.Topics {
			m.owned = append(m.owned, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: tp.TopicID, Partitions: tp.Partitions})
		}
	}
	return errName(0)
}

func (m *scriptedMember) loop() {
	defer close(m.done)
	for {
		select {
		case <-m.stop:
			return
		case <-time.After(200 * time.Millisecond):
		}
		m.mu.Lock()
		m.apply(m.heartbeat(m.request(m.epoch)))
		m.mu.Unlock()
	}
}

// fencing sends requests the coordinator must refuse (and one commit it
// must accept) and returns their error names.
func (m *scriptedMember) fencing() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var codes []string
	topic, part := cgTopic, int32(-1)
	for _, tp := range m.owned {
		if len(tp.Partitions) > 0 {
			part = tp.Partitions[0]
			break
		}
	}
	if part < 0 {
		m.t.Fatalf("scripted member owns nothing after settling: %+v", m.owned)
	}
	commit := func(version int16, member string, epoch int32) {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.SetVersion(version)
		req.Group, req.MemberID, req.Generation = m.group, member, epoch
		req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: topic, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: part, Offset: 1}}}}
		r, err := m.c.do(req)
		if err != nil {
			m.t.Fatal(err)
		}
		resp := r.(*kmsg.OffsetCommitResponse)
		codes = append(codes, "commit:"+errName(resp.Topics[0].Partitions[0].ErrorCode))
	}
	commit(9, m.id, m.epoch+1)   // newer epoch
	commit(9, m.id, m.epoch)     // its own epoch, a partition it holds
	commit(8, m.id, m.epoch)     // a KIP-848 member on a classic version
	commit(9, "not-a-member", 1) // unknown member
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.SetVersion(9)
	fg := kmsg.NewOffsetFetchRequestGroup()
	fg.Group, fg.MemberID, fg.MemberEpoch = m.group, &m.id, m.epoch+1
	fg.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: topic, Partitions: []int32{part}}}
	fetch.Groups = []kmsg.OffsetFetchRequestGroup{fg}
	r, err := m.c.do(fetch)
	if err != nil {
		m.t.Fatal(err)
	}
	codes = append(codes, "fetch:"+errName(r.(*kmsg.OffsetFetchResponse).Groups[0].ErrorCode))
	hb := func(req *kmsg.ConsumerGroupHeartbeatRequest) {
		codes = append(codes, "heartbeat:"+errName(m.heartbeat(req).ErrorCode))
	}
	hb(m.request(m.epoch + 1)) // ahead of the coordinator
	unknown := m.request(1)
	unknown.MemberID = "not-a-member"
	hb(unknown)
	badRegex := consumerJoin(m.group, m.id+"-regex")
	badRegex.SubscribedTopicNames, badRegex.SubscribedTopicRegex = nil, kmsg.StringPtr("rx-(")
	hb(badRegex)
	badAssignor := consumerJoin(m.group, m.id+"-assignor", cgTopic)
	badAssignor.ServerAssignor = kmsg.StringPtr("no-such-assignor")
	hb(badAssignor)
	return codes
}

// leave stops the heartbeats and leaves with epoch -1.
func (m *scriptedMember) leave() string {
	m.once.Do(func() { close(m.stop) })
	<-m.done
	return "leave:" + errName(m.heartbeat(m.request(-1)).ErrorCode)
}

func errName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return e.Message
	}
	return fmt.Sprint(code)
}

// Member by member. Kafka's uniform assignor visits members, topics and
// partitions in java.util.HashMap order (member ids are the clients'
// random UUIDs), so which member gets which partitions differs between the
// sides even when both coordinators compute alike: the client that keeps
// or takes the extra partition of an uneven split is the one the member
// order puts first. That order is the order in which Kafka's coordinator
// hands the members over: its member map (a TimelineHashMap, whose order
// follows the group's history), the member the computing request adds
// last (plugins/assignor-uniform MemberMap). The member-level comparison
// is therefore made through the assignor itself: at every step, each
// side's settled assignment must equal, member by member, what Kafka's
// uniform algorithm (plugins/assignor-uniform, held equal to Kafka 4.4's
// UniformAssignor, fed as TargetAssignmentBuilder feeds it, by its parity
// vectors) computes from that side's own member ids, subscriptions,
// previous assignment and member-map history. The history is known up to
// which request computed the step's target: the step's joiner's own
// heartbeat (it is then the addition) or a later one (it is then in the
// map, inserted last); both are tried (docs/CONSUMER.md).

// cgAssignment is a settled assignment: member id -> topic -> partitions.
type cgAssignment map[string]map[string][]int32

func assignmentOf(g kmsg.ConsumerGroupDescribeResponseGroup) cgAssignment {
	out := cgAssignment{}
	for _, m := range g.Members {
		a := map[string][]int32{}
		for _, tp := range m.Assignment.TopicPartitions {
			a[tp.Topic] = append(a[tp.Topic], tp.Partitions...)
		}
		out[m.MemberID] = a
	}
	return out
}

// memberHistory is a coordinator's member map as the steps leave it: each
// member's insertion number and the most members it held.
type memberHistory struct {
	seq  map[string]int64
	next int64
	peak int
}

// handOffs are the member maps the step's target may have been computed
// on: the members that left removed; the joiners (in every order) inserted,
// the last of them either the computing request's addition or already in
// the map. It returns them with a label each.
func (h memberHistory) handOffs(ids []string) ([]string, []func(string) int64, []int) {
	var joiners []string
	for _, id := range ids {
		if _, ok := h.seq[id]; !ok {
			joiners = append(joiners, id)
		}
	}
	var labels []string
	var seqs []func(string) int64
	var peaks []int
	for _, order := range permutations(joiners) {
		for _, added := range []bool{true, false} {
			seq := map[string]int64{}
			for _, id := range ids {
				if v, ok := h.seq[id]; ok {
					seq[id] = v
				}
			}
			next, inMap := h.next, len(ids)-len(joiners)
			for k, id := range order {
				if k == len(order)-1 && added {
					seq[id] = -1
					continue
				}
				seq[id], next, inMap = next, next+1, inMap+1
			}
			label := "no joiner"
			if len(order) > 0 {
				label = "joiner in the map"
				if added {
					label = "joiner added by the computing request"
				}
				label += " (join order " + strings.Join(order, ",") + ")"
			}
			labels = append(labels, label)
			seqs = append(seqs, func(id string) int64 { return seq[id] })
			peaks = append(peaks, max(h.peak, inMap))
			if len(order) == 0 {
				break
			}
		}
	}
	return labels, seqs, peaks
}

// advance records the step's members: the ones gone removed, the new ones
// inserted (in id order; each step has at most one joiner per request).
func (h *memberHistory) advance(ids []string) {
	if h.seq == nil {
		h.seq = map[string]int64{}
	}
	present := map[string]bool{}
	for _, id := range ids {
		present[id] = true
	}
	for id := range h.seq {
		if !present[id] {
			delete(h.seq, id)
		}
	}
	for _, id := range slices.Sorted(slices.Values(ids)) {
		if _, ok := h.seq[id]; !ok {
			h.seq[id], h.next = h.next, h.next+1
		}
	}
	h.peak = max(h.peak, len(h.seq))
}

// uniformCheck compares g's assignment with the uniform assignor run on g's
// members over prev, handed over from the side's member map; with twoRuns,
// a regex member's subscription may also have been assigned first without
// its topics (the run of its join, before the regex was resolved). It
// returns "uniform=ok" or what differs.
func (s *cgSide) uniformCheck(g kmsg.ConsumerGroupDescribeResponseGroup, prev cgAssignment, twoRuns bool) string {
	got := assignmentOf(g)
	ids := make([]string, len(g.Members))
	for i, m := range g.Members {
		ids[i] = m.MemberID
	}
	labels, seqs, peaks := s.table.handOffs(ids)
	defer s.table.advance(ids)
	var first cgAssignment
	for k := range labels {
		mm := handOff{peak: peaks[k], seq: seqs[k]}
		want := s.uniformRun(g, prev, false, mm)
		if k == 0 {
			first = want
		}
		if equalAssignments(got, want) {
			s.t.Logf("%s: uniform matches with %s", s.name, labels[k])
			return "uniform=ok"
		}
		for k1 := range labels {
			if !twoRuns {
				break
			}
			// the join's run (regex unresolved), then this one
			mid := s.uniformRun(g, prev, true, handOff{peak: peaks[k1], seq: seqs[k1]})
			if equalAssignments(got, s.uniformRun(g, mid, false, mm)) {
				s.t.Logf("%s: uniform matches in two runs, with %s then %s", s.name, labels[k1], labels[k])
				return "uniform=ok"
			}
		}
	}
	var diffs []string
	for _, m := range g.Members {
		if !slices.Equal(flat(got[m.MemberID]), flat(first[m.MemberID])) {
			diffs = append(diffs, fmt.Sprintf("%s holds %v, uniform gives %v", m.ClientID, flat(got[m.MemberID]), flat(first[m.MemberID])))
		}
	}
	sort.Strings(diffs)
	return "uniform differs: " + strings.Join(diffs, "; ")
}

// permutations lists every order of ids.
func permutations(ids []string) [][]string {
	if len(ids) <= 1 {
		return [][]string{slices.Clone(ids)}
	}
	var out [][]string
	for i := range ids {
		rest := append(slices.Clone(ids[:i]), ids[i+1:]...)
		for _, p := range permutations(rest) {
			out = append(out, append([]string{ids[i]}, p...))
		}
	}
	return out
}

// handOff is the member map a run is handed over from.
type handOff struct {
	peak int
	seq  func(string) int64
}

func equalAssignments(a, b cgAssignment) bool {
	if len(a) != len(b) {
		return false
	}
	for id, x := range a {
		y, ok := b[id]
		if !ok || !slices.Equal(flat(x), flat(y)) {
			return false
		}
	}
	return true
}

// flat lists an assignment as sorted "topic-partition" names.
func flat(a map[string][]int32) []string {
	var out []string
	for t, ps := range a {
		for _, p := range ps {
			out = append(out, fmt.Sprintf("%s-%d", t, p))
		}
	}
	sort.Strings(out)
	return out
}

// subscription is a member's subscribed topics that exist: its names, or
// the side's topics its regex matches whole (RE2, as the coordinators).
func (s *cgSide) subscription(m kmsg.ConsumerGroupDescribeResponseGroupMember, regexUnresolved bool) []string {
	var out []string
	if m.SubscribedTopicRegex != nil && *m.SubscribedTopicRegex != "" {
		if regexUnresolved {
			return nil
		}
		re := regexp.MustCompile("^(?:" + *m.SubscribedTopicRegex + ")$")
		for t := range s.topics {
			if re.MatchString(t) {
				out = append(out, t)
			}
		}
	} else {
		for _, t := range m.SubscribedTopics {
			if _, ok := s.topics[t]; ok {
				out = append(out, t)
			}
		}
	}
	sort.Strings(out)
	return out
}

// uniformRun is one run of the uniform assignor as the coordinators make
// it: subscribed topics ascending by id, members ascending by id with
// their current partitions (prev; none for a new member), heterogeneous
// when some topic is not subscribed by every member.
func (s *cgSide) uniformRun(g kmsg.ConsumerGroupDescribeResponseGroup, prev cgAssignment, regexUnresolved bool, h handOff) cgAssignment {
	s.t.Helper()
	members := slices.Clone(g.Members)
	sort.Slice(members, func(i, j int) bool { return members[i].MemberID < members[j].MemberID })
	subs := make([][]string, len(members))
	subscribers := map[string]int{}
	for i, m := range members {
		subs[i] = s.subscription(m, regexUnresolved)
		for _, t := range subs[i] {
			subscribers[t]++
		}
	}
	names := make([]string, 0, len(subscribers))
	for t := range subscribers {
		names = append(names, t)
	}
	ids := s.topicIDs(names)
	sort.Slice(names, func(i, j int) bool {
		a, b := ids[names[i]], ids[names[j]]
		return bytes.Compare(a[:], b[:]) < 0
	})
	req := &abi.PartitionAssignRequest{GroupID: s.group}
	index := map[string]int32{}
	for i, t := range names {
		index[t] = int32(i)
		req.Topics = append(req.Topics, abi.Topic{ID: ids[t], Name: t, Partitions: s.topics[t]})
		if subscribers[t] != len(members) {
			req.Heterogeneous = true
		}
	}
	for i, m := range members {
		cm := abi.ConsumerMember{ID: m.MemberID, Subscribed: []int32{}}
		for _, t := range subs[i] {
			cm.Subscribed = append(cm.Subscribed, index[t])
		}
		slices.Sort(cm.Subscribed)
		for _, t := range names {
			if ps := slices.Sorted(slices.Values(prev[m.MemberID][t])); len(ps) > 0 {
				cm.Assigned = append(cm.Assigned, abi.TopicPartitions{Topic: index[t], Partitions: ps})
			}
		}
		req.Members = append(req.Members, cm)
	}
	mm := &uniform.MemberMap{Peak: h.peak}
	for _, m := range req.Members {
		mm.Seq = append(mm.Seq, h.seq(m.ID))
	}
	resp, err := uniform.AssignFrom(req, mm)
	if err != nil {
		s.t.Fatalf("%s: uniform assignor: %v", s.name, err)
	}
	out := cgAssignment{}
	for i, m := range members {
		a := map[string][]int32{}
		for _, tp := range resp.Members[i] {
			a[names[tp.Topic]] = append(a[names[tp.Topic]], tp.Partitions...)
		}
		out[m.MemberID] = a
	}
	return out
}

// topicIDs looks the topics' ids up on the data plane.
func (s *cgSide) topicIDs(names []string) map[string]abi.TopicID {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	for _, n := range names {
		req.Topics = append(req.Topics, kmsg.MetadataRequestTopic{Topic: kmsg.StringPtr(n)})
	}
	resp, err := req.RequestWith(ctx, s.admin)
	if err != nil {
		s.t.Fatal(err)
	}
	out := map[string]abi.TopicID{}
	for _, t := range resp.Topics {
		if t.ErrorCode != 0 || t.Topic == nil {
			s.t.Fatalf("%s: metadata of %v: %v", s.name, names, kerr.ErrorForCode(t.ErrorCode))
		}
		out[*t.Topic] = abi.TopicID(t.TopicID)
	}
	return out
}
