package interop

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sessionTimeoutMs is the suite's group session timeout: the
// classic clients ask for it, and the streams protocol takes it from the
// coordinator's group config, so the broker's minimums are lowered to allow it.
const sessionTimeoutMs = 10000

// heartbeatIntervalMs is the suite's heartbeat interval, the same for every
// coordinator and protocol: the classic instances ask for it
// (heartbeat.interval.ms), the streams protocol takes it from the
// coordinator (group.streams.heartbeat.interval.ms on the broker,
// streams.heartbeat.interval.ms on coordhost). It bounds how fast a member
// learns of a new assignment, so it sets the pace of an online roll; the
// offline baseline's gap is its session-timeout wait and restarts, which
// it barely moves. The broker's minimums are lowered to allow it.
const heartbeatIntervalMs = 250

// brokerConfig is the server.properties of the single-node KRaft broker of
// the baseline, beyond its ports and directory. Names are Kafka 4.4's
// (GroupCoordinatorConfig, TransactionLogConfig, ...).
var brokerConfig = map[string]string{
	"process.roles":                                    "broker,controller",
	"node.id":                                          "1",
	"controller.listener.names":                        "CONTROLLER",
	"inter.broker.listener.name":                       "PLAINTEXT",
	"listener.security.protocol.map":                   "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
	"group.coordinator.rebalance.protocols":            "classic,consumer,streams",
	"offsets.topic.replication.factor":                 "1",
	"offsets.topic.num.partitions":                     "3",
	"transaction.state.log.replication.factor":         "1",
	"transaction.state.log.min.isr":                    "1",
	"transaction.state.log.num.partitions":             "3",
	"share.coordinator.state.topic.replication.factor": "1",
	"share.coordinator.state.topic.min.isr":            "1",
	"num.partitions":                                   "1",
	"default.replication.factor":                       "1",
	"min.insync.replicas":                              "1",
	"auto.create.topics.enable":                        "false",
	"group.min.session.timeout.ms":                     "1000",
	"group.initial.rebalance.delay.ms":                 "0",
	"group.streams.session.timeout.ms":                 fmt.Sprint(sessionTimeoutMs),
	"group.streams.min.session.timeout.ms":             "1000",
	"group.streams.heartbeat.interval.ms":              fmt.Sprint(heartbeatIntervalMs),
	"group.streams.min.heartbeat.interval.ms":          "100",
	"group.streams.initial.rebalance.delay.ms":         "0",
	"group.streams.num.standby.replicas":               "1",
	"group.consumer.session.timeout.ms":                fmt.Sprint(sessionTimeoutMs),
	"group.consumer.min.session.timeout.ms":            "1000",
	"group.consumer.heartbeat.interval.ms":             fmt.Sprint(heartbeatIntervalMs),
	"group.consumer.min.heartbeat.interval.ms":         "100",
	"log.flush.interval.messages":                      "9223372036854775807",
	"log.segment.bytes":                                "16777216",
}

// broker is a running single-node Apache Kafka 4.4 broker (KRaft, combined
// broker and controller) started from the Maven jars.
type broker struct {
	addr string
	proc *proc
}

// startBroker formats a fresh log directory with a random cluster id and
// starts the broker on loopback ports, waiting (bounded) until it answers
// Metadata. The broker is killed when the test ends.
func startBroker(t *testing.T, logDir string) *broker {
	t.Helper()
	port := freePort(t)
	return launchBroker(t, logDir, port, map[string]string{
		"listeners":            fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", port),
		"advertised.listeners": fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", port),
	})
}

// launchBroker is startBroker with the broker's own listeners (props; a
// CONTROLLER listener is added) and extra kafka-storage format arguments.
// port is the PLAINTEXT listener that waits for Metadata.
func launchBroker(t *testing.T, logDir string, port int, props map[string]string, formatArgs ...string) *broker {
	t.Helper()
	return launchBrokerFrom(t, appDir, logDir, port, props, formatArgs...)
}

// launchBrokerFrom is launchBroker with the classpath of the Maven project
// in project (one that adds a broker plugin, such as an authorizer).
func launchBrokerFrom(t *testing.T, project, logDir string, port int, props map[string]string, formatArgs ...string) *broker {
	t.Helper()
	cport := freePort(t)
	dir := filepath.Join(t.TempDir(), "kraft")
	props["listeners"] += fmt.Sprintf(",CONTROLLER://127.0.0.1:%d", cport)
	props["controller.quorum.voters"] = fmt.Sprintf("1@127.0.0.1:%d", cport)
	props["log.dirs"] = dir
	for k, v := range brokerConfig {
		if _, set := props[k]; !set {
			props[k] = v
		}
	}
	cfg := filepath.Join(logDir, "server.properties")
	if err := os.WriteFile(cfg, []byte(propertiesText(props)), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"format", "-t", clusterID(t), "-c", cfg}, formatArgs...)
	format := startJavaFrom(t, project, "broker-format", logDir, "kafka.tools.StorageTool", args...)
	select {
	case <-format.done:
		if format.err != nil {
			t.Fatalf("kafka-storage format: %v\n%s", format.err, format.tail(40))
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("kafka-storage format did not finish in 2m\n%s", format.tail(40))
	}
	b := &broker{addr: fmt.Sprintf("127.0.0.1:%d", port)}
	b.proc = startJavaFrom(t, project, "broker", logDir, "kafka.Kafka", cfg)
	if err := waitMetadata(b.addr, 3*time.Minute, b.proc); err != nil {
		t.Fatalf("broker: %v\n%s", err, b.proc.tail(60))
	}
	return b
}

// waitMetadata polls addr with Metadata requests until it lists a broker.
func waitMetadata(addr string, d time.Duration, p *proc) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	deadline := time.Now().Add(d)
	var last error
	for time.Now().Before(deadline) {
		if p != nil && p.exited() {
			return fmt.Errorf("process exited: %v", p.err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		cancel()
		if err == nil && len(resp.Brokers) > 0 {
			return nil
		}
		last = err
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("no Metadata answer from %s within %v (last error: %v)", addr, d, last)
}

// clusterID is a random Kafka Uuid: 16 bytes, URL-safe base64 without
// padding, drawn again when it starts with '-' (as Kafka's
// Uuid.randomUuid does): kafka-storage's argument parser takes such an id
// for an option and refuses the format.
func clusterID(t *testing.T) string {
	for {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			t.Fatal(err)
		}
		if id := base64.RawURLEncoding.EncodeToString(b[:]); id[0] != '-' {
			return id
		}
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func propertiesText(props map[string]string) string {
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, props[k])
	}
	return b.String()
}
