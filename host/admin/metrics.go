package admin

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Metrics counts what the Kafka listeners serve and renders it in the
// Prometheus text format. It implements wire.Observer.
type Metrics struct {
	conns atomic.Int64

	mu   sync.Mutex
	apis map[int16]*apiStats
	// gauges and families are read at scrape time.
	gauges   map[string]gauge
	families map[string]family
}

// Series is one labelled value of a gauge family: label name and value
// pairs, in the order they are written.
type Series struct {
	Labels [][2]string
	Value  float64
}

type family struct {
	help string
	fn   func() []Series
}

type apiStats struct {
	count, errors int64
	seconds       float64
}

type gauge struct {
	help    string
	fn      func() float64
	counter bool // a counter's TYPE
}

// NewMetrics returns an empty registry.
func NewMetrics() *Metrics {
	return &Metrics{apis: make(map[int16]*apiStats), gauges: make(map[string]gauge), families: make(map[string]family)}
}

// Served records one request of key that took d; err != nil counts as an error.
func (m *Metrics) Served(key int16, d time.Duration, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.apis[key]
	if s == nil {
		s = &apiStats{}
		m.apis[key] = s
	}
	s.count++
	s.seconds += d.Seconds()
	if err != nil {
		s.errors++
	}
}

// Conn adds delta to the open connection count.
func (m *Metrics) Conn(delta int) { m.conns.Add(int64(delta)) }

// Gauge registers a gauge named name (with the coordhost_ prefix added
// unless it has it) read by fn at scrape time.
func (m *Metrics) Gauge(name, help string, fn func() float64) {
	m.register(name, gauge{help: help, fn: fn})
}

// Counter registers a counter named name (coordhost_ prefix added unless
// it has it) read by fn at scrape time; fn never decreases.
func (m *Metrics) Counter(name, help string, fn func() float64) {
	m.register(name, gauge{help: help, fn: fn, counter: true})
}

// register adds g as name, with the coordhost_ prefix added unless it
// has it.
func (m *Metrics) register(name string, g gauge) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !strings.HasPrefix(name, "coordhost_") {
		name = "coordhost_" + name
	}
	m.gauges[name] = g
}

// GaugeFamily registers a labelled gauge named name (coordhost_ prefix
// added unless it has it) whose series fn returns at scrape time.
func (m *Metrics) GaugeFamily(name, help string, fn func() []Series) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !strings.HasPrefix(name, "coordhost_") {
		name = "coordhost_" + name
	}
	m.families[name] = family{help, fn}
}

// WriteTo writes every metric in the Prometheus text exposition format.
func (m *Metrics) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	fmt.Fprintf(cw, "# HELP coordhost_kafka_connections Open Kafka client connections.\n# TYPE coordhost_kafka_connections gauge\ncoordhost_kafka_connections %d\n", m.conns.Load())
	m.mu.Lock()
	keys := make([]int16, 0, len(m.apis))
	for k := range m.apis {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	fmt.Fprint(cw, "# HELP coordhost_kafka_requests_total Kafka requests served, by API.\n# TYPE coordhost_kafka_requests_total counter\n")
	for _, k := range keys {
		fmt.Fprintf(cw, "coordhost_kafka_requests_total{api=%q} %d\n", kmsg.NameForKey(k), m.apis[k].count)
	}
	fmt.Fprint(cw, "# HELP coordhost_kafka_request_errors_total Kafka requests that closed their connection with an error, by API.\n# TYPE coordhost_kafka_request_errors_total counter\n")
	for _, k := range keys {
		fmt.Fprintf(cw, "coordhost_kafka_request_errors_total{api=%q} %d\n", kmsg.NameForKey(k), m.apis[k].errors)
	}
	fmt.Fprint(cw, "# HELP coordhost_kafka_request_seconds_total Time spent serving Kafka requests, by API.\n# TYPE coordhost_kafka_request_seconds_total counter\n")
	for _, k := range keys {
		fmt.Fprintf(cw, "coordhost_kafka_request_seconds_total{api=%q} %g\n", kmsg.NameForKey(k), m.apis[k].seconds)
	}
	names, gs := sorted(m.gauges)
	fnames, fs := sorted(m.families)
	m.mu.Unlock()
	for i, n := range names {
		kind := "gauge"
		if gs[i].counter {
			kind = "counter"
		}
		fmt.Fprintf(cw, "# HELP %s %s\n# TYPE %s %s\n%s %g\n", n, gs[i].help, n, kind, n, gs[i].fn())
	}
	for i, n := range fnames {
		fmt.Fprintf(cw, "# HELP %s %s\n# TYPE %s gauge\n", n, fs[i].help, n)
		for _, s := range fs[i].fn() {
			fmt.Fprint(cw, n)
			for j, l := range s.Labels {
				sep := ","
				if j == 0 {
					sep = "{"
				}
				fmt.Fprintf(cw, "%s%s=%q", sep, l[0], l[1])
			}
			if len(s.Labels) > 0 {
				fmt.Fprint(cw, "}")
			}
			fmt.Fprintf(cw, " %g\n", s.Value)
		}
	}
	return cw.n, cw.err
}

// sorted returns m's names in order and their values.
func sorted[V any](m map[string]V) ([]string, []V) {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	vs := make([]V, len(names))
	for i, n := range names {
		vs[i] = m[n]
	}
	return names, vs
}

type countWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
	return n, err
}
