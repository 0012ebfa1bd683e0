package interop

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// appConfig is one Kafka Streams instance of the test application.
type appConfig struct {
	name       string // process name, also the log file name
	bootstrap  string // where the client connects: a broker or a coordhost listener
	appID      string // application.id = group id
	protocol   string // group.protocol: classic or streams
	instanceID string // group.instance.id; empty for dynamic membership
	standbys   int    // num.standby.replicas
	appServer  string // application.server host:port
	stateDir   string // state.dir; kept across restarts of the same instance
	leave      bool   // leave the group on close (see App.java's close.leave.group)
	project    string // Maven project with the client version; "" = appDir (4.4.0)
	topics     topics // the application's input and output
	app        appSpec
	extra      []string // further client properties as key=value (SASL login, ...)
}

// topics are one scenario's input and output topics: each scenario has its
// own, so its verifier sees only its own records.
// ordersApp also reads a customers table and writes per-region aggregates.
type topics struct{ in, out, customers, regions string }

// topicsOf names the topics of the scenario whose application id is group.
func topicsOf(group string) topics {
	return topics{in: group + "-in", out: group + "-out", customers: group + "-customers", regions: group + "-regions"}
}

// lostTaskMarkers are log phrases of Kafka Streams 4.4 and its consumer
// that mean an instance lost tasks or partitions without a clean handover.
var lostTaskMarkers = []string{
	"lost due to missed rebalance",                // Streams, classic: onPartitionsLost
	"Invoking tasks lost callback",                // Streams protocol: onAllTasksLost
	"now lost active tasks",                       // Streams protocol: lost tasks revoked
	"Giving away all assigned partitions as lost", // classic consumer reset
	"Lost previously assigned partitions",         // classic consumer onPartitionsLost
	"missed a rebalance and dropped out",          // Streams: fenced thread closes all tasks dirty
	"UNCAUGHT",                                    // App.java: a stream thread died
}

// startApp starts one instance of the Streams application.
func startApp(t *testing.T, logDir string, c appConfig) *proc {
	t.Helper()
	main, inKey := "io.coordhost.interop.streams.App", "input.topic"
	if c.app.name == ordersApp.name {
		main, inKey = "io.coordhost.interop.streams.OrdersApp", "orders.topic"
	}
	args := []string{
		"bootstrap.servers=" + c.bootstrap,
		"application.id=" + c.appID,
		"group.protocol=" + c.protocol,
		fmt.Sprintf("num.standby.replicas=%d", c.standbys),
		"application.server=" + c.appServer,
		"state.dir=" + c.stateDir,
		"client.id=" + c.name,
		inKey + "=" + c.topics.in,
		"output.topic=" + c.topics.out,
		fmt.Sprintf("heartbeat.interval.ms=%d", heartbeatIntervalMs),
		fmt.Sprintf("close.leave.group=%t", c.leave),
	}
	if c.instanceID != "" {
		args = append(args, "group.instance.id="+c.instanceID)
	}
	project := c.project
	if project == "" {
		project = appDir
	}
	if c.app.name == ordersApp.name {
		args = append(args, "customers.topic="+c.topics.customers, "regions.topic="+c.topics.regions)
	}
	args = append(args, c.extra...)
	if c.app.threads > 0 {
		args = append(args, fmt.Sprintf("num.stream.threads=%d", c.app.threads))
	}
	return startJavaFrom(t, project, c.name, logDir, main, args...)
}

// fleet is the set of instances of one application, restarted in place.
type fleet struct {
	t      *testing.T
	logDir string
	cfgs   []appConfig
	procs  []*proc
	old    []*proc // stopped instances, kept for log scans and failure reports
}

// newFleet describes n instances of application appID on topics tp
// against bootstrap.
func newFleet(t *testing.T, logDir, bootstrap, appID string, n int, tp topics) *fleet {
	f := &fleet{t: t, logDir: logDir}
	for i := 0; i < n; i++ {
		f.cfgs = append(f.cfgs, appConfig{
			bootstrap: bootstrap,
			appID:     appID,
			topics:    tp,
			standbys:  1,
			appServer: fmt.Sprintf("127.0.0.1:%d", freePort(t)),
			stateDir:  filepath.Join(t.TempDir(), fmt.Sprintf("state-%d", i)),
		})
	}
	f.procs = make([]*proc, n)
	return f
}

// closeMode is how an instance closes: leaving the group at once, or with
// Kafka Streams' default (a dynamic member stays until its session expires).
type closeMode string

const (
	closeLeave   closeMode = "leave-group"
	closeDefault closeMode = "default"
)

// setClose makes every instance close in mode cm.
func (f *fleet) setClose(cm closeMode) {
	for i := range f.cfgs {
		f.cfgs[i].leave = cm == closeLeave
	}
}

// leaveOnClose makes every instance leave the group when it is stopped,
// as an operator rolling instances one at a time wants: its tasks move at
// once instead of after the session timeout. The offline baseline keeps
// Kafka Streams' default (stay until the session expires), which is why
// Kafka's documented offline procedure waits out the session timeout.
func (f *fleet) leaveOnClose() {
	for i := range f.cfgs {
		f.cfgs[i].leave = true
	}
}

// setApp makes every instance run app.
func (f *fleet) setApp(app appSpec) {
	for i := range f.cfgs {
		f.cfgs[i].app = app
	}
}

// start starts instance i with the given group protocol.
func (f *fleet) start(i int, protocol string, gen int) {
	f.startVersion(i, protocol, gen, "")
}

// startVersion starts instance i with the given group protocol and the
// client version of Maven project (see appConfig.project).
func (f *fleet) startVersion(i int, protocol string, gen int, project string) {
	c := f.cfgs[i]
	c.protocol = protocol
	c.project = project
	c.name = fmt.Sprintf("app%d-%s-%d", i, protocol, gen)
	if project != "" {
		c.name += "-" + strings.TrimPrefix(project, appDir+"-")
	}
	f.procs[i] = startApp(f.t, f.logDir, c)
}

// stop stops instance i cleanly (bounded) and keeps its process for reports.
func (f *fleet) stop(i int) error {
	p := f.procs[i]
	if p == nil {
		return nil
	}
	f.procs[i] = nil
	f.old = append(f.old, p)
	return p.stop(45 * time.Second)
}

// startAll starts every instance with protocol, in parallel.
func (f *fleet) startAll(protocol string, gen int) {
	for i := range f.cfgs {
		f.start(i, protocol, gen)
	}
}

// stopAll stops every instance in parallel and returns the first error.
// The instances move to old before the goroutines start: appends to old
// from parallel stops raced, and a lost one dropped that instance's log
// from every later scan (sim-validate's task runs among them).
func (f *fleet) stopAll() error {
	live := slices.Clone(f.procs)
	for i, p := range live {
		if p != nil {
			f.procs[i] = nil
			f.old = append(f.old, p)
		}
	}
	errs := make([]error, len(live))
	var wg sync.WaitGroup
	for i, p := range live {
		if p == nil {
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = p.stop(45 * time.Second) }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// waitRunning waits (bounded by d per instance) until every live instance
// has reported RUNNING at least once.
func (f *fleet) waitRunning(d time.Duration) error {
	for _, p := range f.procs {
		if p == nil {
			continue
		}
		if _, _, err := p.waitLine("STATE RUNNING", 0, d); err != nil {
			return err
		}
	}
	return nil
}

// all returns every process the fleet ever ran.
func (f *fleet) all() []*proc {
	out := append([]*proc{}, f.old...)
	for _, p := range f.procs {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}

// lostTaskLines are the lines of every instance's log matching lostTaskMarkers.
func (f *fleet) lostTaskLines() []string {
	var out []string
	for _, p := range f.all() {
		for _, l := range p.grep(lostTaskMarkers...) {
			out = append(out, p.name+": "+l)
		}
	}
	return out
}
