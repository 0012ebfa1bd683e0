// Command hbload is the streams-heartbeat load generator of the wire
// comparison (docs/BENCHMARKS.md, "wire: streams heartbeats, coordhost vs
// Kafka 4.4"). It runs as its own process against any Kafka-protocol
// coordinator — coordhost or an Apache Kafka broker — so the server's CPU
// time can be read from /proc/<pid>/stat without the load's own work in it.
//
// One run: create the source topic, join
// -groups streams groups of -members raw KIP-1071 members each (one
// subtopology reading the topic), heartbeat until every group is steady
// (every task assigned and acknowledged, no response changing anything for
// two passes), then run the phases — closed loop ("closed": -conns
// connections, -inflight requests in flight on each, a member never has two
// heartbeats in flight) or open loop at a fixed rate ("rate=2000",
// "rate=0.8x": 0.8 times this run's closed-loop throughput; -pace even
// spaces the requests 1/rate apart, -pace tick releases them in a burst
// every millisecond; -open raw sends them from one thread over raw
// sockets, -open kgo hands each to one of -senders goroutines sending
// through kgo, raw.go), each after a warm-up — then measure the server's idle CPU with no requests, and
// finally leave. Each phase prints one line
// "RESULT {json}"; latency is measured from the scheduled send time in an
// open-loop phase, so a stalled server is not hidden by a stalled client.
//
// It lives under interop/ and never ships in the coordhost binary.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coordhost/coordhost/interop/proccpu"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type options struct {
	bootstrap string
	pid       int
	metrics   string // coordhost's /metrics URL: the share its poller answered
	prefix    string
	topic     string
	groups    int
	members   int
	conns     int
	inflight  int
	workers   int // open-loop senders
	idle      time.Duration
	warmup    time.Duration
	phase     time.Duration
	phases    []string
	settle    time.Duration
	show      int64 // answers that changed something in a phase to print
	pace      string
	open      string // open-loop sender: raw or kgo
	verbose   bool
}

func main() {
	var o options
	var phases string
	flag.StringVar(&o.bootstrap, "bootstrap", "127.0.0.1:9092", "server address")
	flag.IntVar(&o.pid, "pid", 0, "server process id whose CPU time is measured (0: none)")
	flag.StringVar(&o.metrics, "metrics", "", "coordhost's metrics URL (http://admin/metrics): each phase reports the share of its heartbeats coordhost's own poller answered")
	flag.StringVar(&o.prefix, "prefix", "hb", "group and member name prefix")
	flag.StringVar(&o.topic, "topic", "", "source topic, created with -members partitions (default prefix-src)")
	flag.IntVar(&o.groups, "groups", 1, "streams groups")
	flag.IntVar(&o.members, "members", 10, "members per group (one task each)")
	flag.IntVar(&o.conns, "conns", 16, "TCP connections")
	flag.IntVar(&o.inflight, "inflight", 1, "closed loop: requests in flight per connection")
	flag.IntVar(&o.workers, "senders", 256, "open loop: concurrent senders")
	flag.DurationVar(&o.idle, "idle", 5*time.Second, "idle CPU window after the phases, members still joined; must be shorter than the session timeout (0: none)")
	flag.DurationVar(&o.warmup, "warmup", 5*time.Second, "warm-up before each phase, same load, not measured")
	flag.DurationVar(&o.phase, "duration", 10*time.Second, "measured time per phase")
	flag.StringVar(&phases, "phases", "closed", "comma-separated phases: closed, rate=N, rate=Fx (F times this run's closed-loop rate)")
	flag.DurationVar(&o.settle, "settle", 3*time.Minute, "bound on reaching steady state")
	flag.Int64Var(&o.show, "show-changed", 0, "print (stderr) up to this many answers of the warm-ups and phases that changed something")
	pace := flag.String("pace", paceEven, "open loop: even (request i due at start + i/rate, released at that time) or tick (all due requests released on a 1 ms ticker)")
	open := flag.String("open", openRaw, "open-loop sender: raw (one thread writes each request at its due time and reads every answer, over raw sockets) or kgo (a paced release handed to one of -senders goroutines, each sending through kgo)")
	flag.BoolVar(&o.verbose, "v", false, "print (stderr) each open-loop phase's pacing: release minus due time and gaps between releases")
	flag.Parse()
	var err error
	if o.pace, err = parsePace(*pace); err != nil {
		fmt.Fprintln(os.Stderr, "hbload:", err)
		os.Exit(2)
	}
	if o.open, err = parseOpen(*open); err != nil {
		fmt.Fprintln(os.Stderr, "hbload:", err)
		os.Exit(2)
	}
	o.phases = strings.Split(phases, ",")
	if o.topic == "" {
		o.topic = o.prefix + "-src"
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "hbload:", err)
		os.Exit(1)
	}
}

// Result is one phase's figures, printed as "RESULT {json}".
type Result struct {
	Phase        string     `json:"phase"`
	Groups       int        `json:"groups"`
	Members      int        `json:"members"`
	TargetRate   float64    `json:"targetRate,omitempty"` // open loop only
	Pace         string     `json:"pace,omitempty"`       // open loop only: even or tick
	Open         string     `json:"open,omitempty"`       // open loop only: the sender, raw or kgo
	Pacing       *paceStats `json:"pacing,omitempty"`     // open loop only: how the requests really left
	Seconds      float64    `json:"seconds"`
	Heartbeats   int64      `json:"heartbeats"`
	Rate         float64    `json:"rate"`
	P50us        float64    `json:"p50us"`
	P99us        float64    `json:"p99us"`
	P999us       float64    `json:"p999us"`
	MaxUs        float64    `json:"maxUs"`
	Errors       int64      `json:"errors"`  // error codes and transport errors
	Changed      int64      `json:"changed"` // responses carrying a new epoch or assignment
	ServerCPU    float64    `json:"serverCpuSec"`
	IdleCPURate  float64    `json:"idleCpuPerSec"` // server CPU-s per s with no requests, after the phases
	CPUPer10k    float64    `json:"cpuPer10k"`     // ServerCPU per 10k heartbeats, idle not subtracted
	NetCPUPer10k float64    `json:"netCpuPer10k"`  // (ServerCPU - IdleCPURate*Seconds) per 10k heartbeats
	LoadCPU      float64    `json:"loadgenCpuSec"` // this process's CPU in the phase
	// The server's context switches per heartbeat in the phase, over
	// the threads that lived through it (proccpu.Switches): how often a
	// server thread went to sleep (voluntary) or lost its CPU
	// (involuntary) for each answer. Absent without -pid.
	SwitchesPerHb    *float64 `json:"serverSwitchesPerHb,omitempty"`
	InvSwitchesPerHb *float64 `json:"serverInvoluntarySwitchesPerHb,omitempty"`
	// PollerShare is the share of the phase's heartbeats coordhost's own
	// poller answered (coordhost_kafka_poller_served_total). Absent
	// without -metrics or when the metric is not there (kafka.poller off).
	PollerShare *float64 `json:"pollerServedShare,omitempty"`
	LoadAvg     string   `json:"loadavg"` // /proc/loadavg at the phase's end (1, 5, 15 min)
}

func run(ctx context.Context, o options) error {
	g, err := newGen(ctx, o)
	if err != nil {
		return err
	}
	defer g.close()
	if err := g.createTopic(ctx); err != nil {
		return err
	}
	t0 := time.Now()
	if err := g.settle(ctx, o.settle); err != nil {
		return err
	}
	fmt.Printf("STEADY %d groups x %d members after %v\n", o.groups, o.members, time.Since(t0).Round(time.Millisecond))
	var (
		closedRate float64
		results    []Result
	)
	for _, ph := range o.phases {
		rate, err := phaseRate(ph, closedRate)
		if err != nil {
			return err
		}
		if o.warmup > 0 {
			if _, _, _, _, err := g.load(ctx, rate, o.warmup); err != nil {
				return fmt.Errorf("phase %s, warm-up: %w", ph, err)
			}
		}
		r, err := g.measure(ctx, rate, o.phase)
		if err != nil {
			return fmt.Errorf("phase %s: %w", ph, err)
		}
		r.Phase = ph
		if ph == "closed" {
			closedRate = r.Rate
		}
		results = append(results, r)
	}
	// The idle window comes after the phases, with the members still in
	// their groups (it is shorter than a session) and the server warmed
	// up: what the server spends with no requests is its background work.
	var idle float64
	if o.idle > 0 && ctx.Err() == nil {
		c0, t1 := serverCPU(o.pid), time.Now()
		time.Sleep(o.idle)
		idle = (serverCPU(o.pid) - c0) / time.Since(t1).Seconds()
		fmt.Printf("IDLE %.4f cpu-s/s over %v, loadavg %s\n", idle, o.idle, loadAvg())
	}
	for _, r := range results {
		r.IdleCPURate = idle
		if r.Heartbeats > 0 {
			r.CPUPer10k = r.ServerCPU / float64(r.Heartbeats) * 1e4
			r.NetCPUPer10k = (r.ServerCPU - idle*r.Seconds) / float64(r.Heartbeats) * 1e4
		}
		b, _ := json.Marshal(r)
		fmt.Printf("RESULT %s\n", b)
	}
	g.leave(ctx)
	return ctx.Err()
}

// phaseRate is a phase's fixed rate in heartbeats/s, 0 for closed loop.
func phaseRate(ph string, closed float64) (float64, error) {
	if ph == "closed" {
		return 0, nil
	}
	v, ok := strings.CutPrefix(ph, "rate=")
	if !ok {
		return 0, fmt.Errorf("phase %q: want closed or rate=N or rate=Fx", ph)
	}
	if f, rel := strings.CutSuffix(v, "x"); rel {
		x, err := strconv.ParseFloat(f, 64)
		if err != nil || closed == 0 {
			return 0, fmt.Errorf("phase %q: needs a number and an earlier closed phase", ph)
		}
		return x * closed, nil
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || x <= 0 {
		return 0, fmt.Errorf("phase %q: bad rate", ph)
	}
	return x, nil
}

// gen holds the members and the connections they heartbeat over.
type gen struct {
	o       options
	conns   []*coordinator
	raw     *rawSender // open-loop sender with -open raw
	members []*member
	next    atomic.Int64 // round-robin cursor over members
	// loading is set while load runs; shown counts the changed answers
	// printed (-show-changed).
	loading atomic.Bool
	shown   atomic.Int64
}

func newGen(ctx context.Context, o options) (*gen, error) {
	g := &gen{o: o}
	for i := 0; i < o.conns; i++ {
		cl, err := kgo.NewClient(kgo.SeedBrokers(o.bootstrap), kgo.RequestRetries(0), kgo.ClientID(clientID))
		if err != nil {
			return nil, err
		}
		c := &coordinator{cl: cl}
		g.conns = append(g.conns, c)
		if err := c.find(ctx); err != nil {
			g.close()
			return nil, err
		}
	}
	for gi := 0; gi < o.groups; gi++ {
		group := fmt.Sprintf("%s-%04d", o.prefix, gi)
		for mi := 0; mi < o.members; mi++ {
			id := fmt.Sprintf("%s-m%04d-%04d", o.prefix, gi, mi)
			m := &member{idx: len(g.members), conn: g.conns[len(g.members)%len(g.conns)], group: group, id: id, process: "p-" + id, topic: o.topic}
			if o.show > 0 {
				m.show = g.showChanged
			}
			g.members = append(g.members, m)
		}
	}
	if o.open == openRaw && slices.ContainsFunc(o.phases, func(ph string) bool { return ph != "closed" }) {
		v, err := heartbeatVersion(ctx, g.conns[0])
		if err == nil {
			// One raw connection beside each kgo one, member i on the
			// i-th of each.
			g.raw, err = newRawSender(g.conns[0].addr, o.conns, v)
		}
		if err != nil {
			g.close()
			return nil, err
		}
	}
	return g, nil
}

// showChanged prints a changed answer of a warm-up or phase while the
// -show-changed budget lasts.
func (g *gen) showChanged(line string) {
	if g.loading.Load() && g.shown.Add(1) <= g.o.show {
		fmt.Fprintf(os.Stderr, "CHANGED %s %s\n", time.Now().UTC().Format("15:04:05.000"), line)
	}
}

func (g *gen) close() {
	if g.raw != nil {
		g.raw.close()
	}
	for _, c := range g.conns {
		c.cl.Close()
	}
}

func (g *gen) createTopic(ctx context.Context) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = g.o.topic, int32(g.o.members), 1
	req.Topics = append(req.Topics, t)
	req.TimeoutMillis = 60000
	cctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	resp, err := req.RequestWith(cctx, g.conns[0].cl)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", g.o.topic, err)
	}
	if c := resp.Topics[0].ErrorCode; c != 0 && c != kerr.TopicAlreadyExists.Code {
		return fmt.Errorf("create topic %s: %w", g.o.topic, kerr.ErrorForCode(c))
	}
	return nil
}

// settle heartbeats every member in passes until two passes in a row
// change nothing, hear of no assignment held back (ASSIGNMENT_DELAYED: the
// initial rebalance delay, or the assignment interval after a group's
// first target, which only a later heartbeat ends), and every group has
// all its tasks assigned. Without the ASSIGNMENT_DELAYED rule a group whose
// first member took every task, with the others joined while the
// interval held their target back, looked steady, and its real target
// came in the measured phase.
func (g *gen) settle(ctx context.Context, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	quiet := 0
	for quiet < 2 {
		if time.Now().After(deadline) {
			return fmt.Errorf("not steady within %v: %s", bound, g.unsteady())
		}
		var changed, errs, delayed atomic.Int64
		g.each(func(m *member) {
			m.mu.Lock()
			a, err := m.heartbeat(ctx)
			m.mu.Unlock()
			if err != nil {
				errs.Add(1)
			}
			if a.changed {
				changed.Add(1)
			}
			if a.delayed {
				delayed.Add(1)
			}
		})
		if err := ctx.Err(); err != nil {
			return err
		}
		if changed.Load() == 0 && errs.Load() == 0 && delayed.Load() == 0 && g.unsteady() == "" {
			quiet++
		} else {
			quiet = 0
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// unsteady says which group lacks assigned tasks, "" when none does.
func (g *gen) unsteady() string {
	tasks := map[string]int{}
	for _, m := range g.members {
		tasks[m.group] += m.owned()
	}
	for grp, n := range tasks {
		if n != g.o.members {
			return fmt.Sprintf("group %s owns %d of %d tasks", grp, n, g.o.members)
		}
	}
	return ""
}

// load heartbeats for d at rate (0: closed loop) and returns the latencies,
// the number of heartbeats that failed and that changed something, and in
// an open-loop phase how the requests left against their due times.
func (g *gen) load(ctx context.Context, rate float64, d time.Duration) (lat []time.Duration, errs, changed int64, pacing *paceStats, err error) {
	g.loading.Store(true)
	defer g.loading.Store(false)
	if rate > 0 && g.raw != nil {
		r := g.raw.load(ctx, rate, d, g.o.pace, min(g.o.workers, len(g.members)), g.pick)
		if r.err != nil {
			return nil, 0, 0, nil, r.err
		}
		st := measurePace(r.dues, r.rels, rate)
		return r.lat, r.errs, r.changed, &st, nil
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		ne   atomic.Int64
		nc   atomic.Int64
		dues []time.Time // open loop: each request's due time ...
		rels []time.Time // ... and when a sender took it
		work = func(due func() (time.Time, bool)) {
			defer wg.Done()
			var mine []time.Duration
			var myDue, myRel []time.Time
			for {
				at, ok := due()
				if !ok {
					break
				}
				if rate > 0 {
					myDue, myRel = append(myDue, at), append(myRel, time.Now())
				}
				m := g.pick()
				a, err := m.heartbeat(context.Background())
				m.mu.Unlock()
				if ctx.Err() != nil && rate == 0 {
					break // a closed-loop request that ended after the window
				}
				mine = append(mine, time.Since(at))
				if err != nil {
					ne.Add(1)
				}
				if a.changed {
					nc.Add(1)
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			dues, rels = append(dues, myDue...), append(rels, myRel...)
			mu.Unlock()
		}
	)
	if rate == 0 {
		for i := 0; i < g.o.conns*g.o.inflight; i++ {
			wg.Add(1)
			go work(func() (time.Time, bool) { return time.Now(), ctx.Err() == nil })
		}
	} else {
		ticks := make(chan time.Time, 1<<16)
		go schedule(ctx, g.o.pace, rate, ticks)
		for i := 0; i < g.o.workers; i++ {
			wg.Add(1)
			go work(func() (time.Time, bool) {
				// Stop at the window's end even with a backlog: the
				// achieved rate then shows the server fell behind.
				t, ok := <-ticks
				return t, ok && ctx.Err() == nil
			})
		}
	}
	wg.Wait()
	if rate > 0 {
		st := measurePace(dues, rels, rate)
		pacing = &st
	}
	return lat, ne.Load(), nc.Load(), pacing, nil
}

// pick locks and returns the next member without a heartbeat in flight.
func (g *gen) pick() *member {
	for {
		m := g.members[int(g.next.Add(1)-1)%len(g.members)]
		if m.mu.TryLock() {
			return m
		}
	}
}

// measure runs one measured phase.
func (g *gen) measure(ctx context.Context, rate float64, d time.Duration) (Result, error) {
	p0, pok0 := pollerServed(g.o.metrics)
	s0, sok0 := proccpu.ReadSwitches(g.o.pid)
	c0, l0 := serverCPU(g.o.pid), selfCPU()
	t0 := time.Now()
	lat, errs, changed, pacing, err := g.load(ctx, rate, d)
	if err != nil {
		return Result{}, err
	}
	secs := time.Since(t0).Seconds()
	c1, l1 := serverCPU(g.o.pid), selfCPU()
	s1, sok1 := proccpu.ReadSwitches(g.o.pid)
	p1, pok1 := pollerServed(g.o.metrics)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[int(float64(len(lat)-1)*p)].Microseconds())
	}
	pace, open := "", ""
	if rate > 0 {
		pace, open = g.o.pace, g.o.open
		if g.o.verbose {
			b, _ := json.Marshal(pacing)
			fmt.Fprintf(os.Stderr, "PACING %s %.0f/s %s\n", pace, rate, b)
		}
	}
	return Result{
		Groups: g.o.groups, Members: g.o.members, TargetRate: rate, Pace: pace, Open: open, Pacing: pacing, Seconds: secs,
		Heartbeats: int64(len(lat)), Rate: float64(len(lat)) / secs,
		P50us: pct(0.5), P99us: pct(0.99), P999us: pct(0.999), MaxUs: pct(1),
		Errors: errs, Changed: changed, ServerCPU: c1 - c0, LoadCPU: l1 - l0, LoadAvg: loadAvg(),
		SwitchesPerHb:    perHeartbeat(sok0 && sok1, s1.Voluntary+s1.Involuntary-s0.Voluntary-s0.Involuntary, len(lat)),
		InvSwitchesPerHb: perHeartbeat(sok0 && sok1, s1.Involuntary-s0.Involuntary, len(lat)),
		PollerShare:      perHeartbeat(pok0 && pok1, p1-p0, len(lat)),
	}, nil
}

// pollerServed reads coordhost_kafka_poller_served_total from url (a
// Prometheus text page); ok is false without url, on any error, or when
// the page has no such line.
func pollerServed(url string) (n int64, ok bool) {
	if url == "" {
		return 0, false
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, false
	}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 16<<20))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if v, found := strings.CutPrefix(sc.Text(), "coordhost_kafka_poller_served_total "); found {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int64(f), err == nil
		}
	}
	return 0, false
}

// perHeartbeat is n per heartbeat, nil when n was not read or there
// were no heartbeats.
func perHeartbeat(ok bool, n int64, heartbeats int) *float64 {
	if !ok || heartbeats == 0 {
		return nil
	}
	v := float64(n) / float64(heartbeats)
	return &v
}

// leave sends every member's leave heartbeat (epoch -1), so the server is
// quiet for whatever runs next on it.
func (g *gen) leave(ctx context.Context) {
	g.each(func(m *member) {
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch = m.group, m.id, -1
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_, _ = m.conn.Request(cctx, req)
	})
}

// each runs f for every member, 8 per connection at a time.
func (g *gen) each(f func(*member)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, g.o.conns*8)
	for _, m := range g.members {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			f(m)
		}()
	}
	wg.Wait()
}
