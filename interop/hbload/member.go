package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/interop/proccpu"
)

// member is one raw KIP-1071 member. Its mutex is held for the whole of a
// heartbeat, so a member never has two in flight. Like the Kafka Streams
// client it sends its topology, process and empty task lists on joining,
// its owned tasks only after they changed, and nulls otherwise; it adopts
// every assignment at once (its tasks are stateless).
type member struct {
	mu      sync.Mutex
	idx     int // place in gen.members
	conn    kmsg.Requestor
	group   string
	id      string
	process string
	topic   string

	epoch   int32
	tasks   [3][]kmsg.TaskIDs // active, standby, warm-up
	report  bool              // tasks changed since last reported
	lastErr string
	// show, when set, is handed a line for every answer that changed
	// something (-show-changed).
	show func(string)
}

// answer is what one heartbeat's response said about the group.
type answer struct {
	// changed: it carried a new epoch or assignment (or an error).
	changed bool
	// delayed: it carried ASSIGNMENT_DELAYED — the group epoch is ahead
	// of its target, which the initial rebalance delay or the assignment
	// interval holds back. There is no timer behind the interval: a later
	// heartbeat computes the target, so the group is not steady yet even
	// if nothing changed.
	delayed bool
}

// statusAssignmentDelayed is StreamsGroupHeartbeatResponse's status code
// ASSIGNMENT_DELAYED (KIP-1071).
const statusAssignmentDelayed = 5

// heartbeat sends one heartbeat (m.mu held by the caller) and applies the
// answer.
func (m *member) heartbeat(ctx context.Context) (answer, error) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	resp, err := m.request().RequestWith(cctx, m.conn)
	cancel()
	return m.apply(resp, err)
}

// request is the member's next heartbeat (m.mu held).
func (m *member) request() *kmsg.StreamsGroupHeartbeatRequest {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = m.group, m.id, m.epoch
	if m.epoch == 0 {
		req.RebalanceTimeoutMillis = 30000
		req.ProcessID = &m.process
		req.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
			{SubtopologyID: "0", SourceTopics: []string{m.topic}}}}
		m.tasks, m.report = [3][]kmsg.TaskIDs{}, true
	}
	if m.report {
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = orEmpty(m.tasks[0]), orEmpty(m.tasks[1]), orEmpty(m.tasks[2])
	}
	return req
}

// apply takes in the answer to the member's last request (m.mu held):
// the response, or the error that stood in for it.
func (m *member) apply(resp *kmsg.StreamsGroupHeartbeatResponse, err error) (a answer, _ error) {
	if err != nil {
		m.lastErr = err.Error()
		return answer{}, err
	}
	if resp.ErrorCode != 0 {
		e := kerr.ErrorForCode(resp.ErrorCode)
		m.lastErr = e.Error()
		if resp.ErrorCode == kerr.FencedMemberEpoch.Code || resp.ErrorCode == kerr.UnknownMemberID.Code {
			m.epoch = 0 // rejoin, as the Streams client does
		}
		return answer{changed: true}, e
	}
	m.report = false
	a.changed = resp.MemberEpoch != m.epoch
	prev := m.epoch
	m.epoch = resp.MemberEpoch
	if resp.ActiveTasks != nil || resp.StandbyTasks != nil || resp.WarmupTasks != nil {
		m.tasks = [3][]kmsg.TaskIDs{resp.ActiveTasks, resp.StandbyTasks, resp.WarmupTasks}
		m.report, a.changed = true, true
	}
	for _, st := range resp.Status {
		a.delayed = a.delayed || st.StatusCode == statusAssignmentDelayed
	}
	if a.changed && m.show != nil {
		m.show(fmt.Sprintf("%s epoch %d -> %d, tasks %v / %v / %v", m.id, prev, resp.MemberEpoch,
			resp.ActiveTasks, resp.StandbyTasks, resp.WarmupTasks))
	}
	return a, nil
}

func orEmpty(t []kmsg.TaskIDs) []kmsg.TaskIDs {
	if t == nil {
		return []kmsg.TaskIDs{}
	}
	return t
}

// owned is the number of active tasks the member holds.
func (m *member) owned() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, t := range m.tasks[0] {
		n += len(t.Partitions)
	}
	return n
}

// coordinator sends requests straight to the group coordinator over one
// kgo connection: kgo routes only the group APIs it knows, and the streams
// APIs are not among them. (One node serves every group here.)
type coordinator struct {
	cl   *kgo.Client
	b    *kgo.Broker
	addr string // host:port, as FindCoordinator gave it
}

func (c *coordinator) find(ctx context.Context) error {
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = "hbload"
	fc.CoordinatorKeys = []string{"hbload"}
	deadline := time.Now().Add(time.Minute)
	for {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := fc.RequestWith(cctx, c.cl)
		cancel()
		if err != nil {
			return fmt.Errorf("FindCoordinator: %w", err)
		}
		node, code, host, port := resp.NodeID, resp.ErrorCode, resp.Host, resp.Port
		if len(resp.Coordinators) > 0 {
			co := resp.Coordinators[0]
			node, code, host, port = co.NodeID, co.ErrorCode, co.Host, co.Port
		}
		if code == 0 {
			c.b = c.cl.Broker(int(node))
			c.addr = net.JoinHostPort(host, strconv.Itoa(int(port)))
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("FindCoordinator: %w", kerr.ErrorForCode(code))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func (c *coordinator) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	return c.b.Request(ctx, req)
}

// serverCPU is the user+system CPU seconds of process pid so far (all its
// threads, live and exited), 0 when pid is 0 or unreadable.
func serverCPU(pid int) float64 { return proccpu.Seconds(pid) }

// selfCPU is this process's user+system CPU seconds so far.
func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// loadAvg is the first three fields of /proc/loadavg.
func loadAvg() string {
	f, err := os.Open("/proc/loadavg")
	if err != nil {
		return "?"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return "?"
	}
	fs := strings.Fields(sc.Text())
	if len(fs) < 3 {
		return "?"
	}
	return strings.Join(fs[:3], " ")
}
