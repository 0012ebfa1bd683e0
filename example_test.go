package coordhost_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"sort"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost"
	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/host/config"
	"github.com/coordhost/coordhost/host/runtime"
)

// Coordhost with its defaults (an embedded data plane and a durable store
// under the data directory) serves a Kafka consumer group: a record is
// produced, consumed in group "readers" and committed, and the committed
// offset is read back.
func Example() {
	dir, err := os.MkdirTemp("", "coordhost-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cfg := config.Default()
	cfg.DataDir = dir
	cfg.Kafka.Listen, cfg.Admin.Listen = "127.0.0.1:0", "127.0.0.1:0" // ephemeral ports
	ch, err := coordhost.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := ch.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer ch.Shutdown(context.Background())

	fmt.Println(consumeOnce(ctx, ch.KafkaAddr(), "greetings", "readers"))
	fmt.Println("committed:", committed(ctx, ch.KafkaAddr(), "readers", "greetings"))
	// Output:
	// hello coordhost
	// committed: map[0:1]
}

// Serve runs coordhost until its context ends (in a program: on SIGTERM),
// then drains; a drained Coordhost does not start again.
func ExampleCoordhost_Serve() {
	dir, err := os.MkdirTemp("", "coordhost-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cfg := config.Default()
	cfg.DataDir, cfg.Kafka.Listen, cfg.Admin.Listen = dir, "127.0.0.1:0", "127.0.0.1:0"
	ch, err := coordhost.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := ch.Start(ctx); err != nil { // clients are served from here on
		log.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- ch.Serve(ctx) }()
	cancel()
	fmt.Println("drained:", <-served == nil)
	fmt.Println("start again:", ch.Start(context.Background()))
	// Output:
	// drained: true
	// start again: coordhost: closed
}

// Coordhost in front of an existing Kafka cluster (here an in-process
// kfake cluster standing in for it): the records and the committed offsets
// live in the cluster, which answers for them directly.
func Example_existingCluster() {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "greetings"))
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Close()
	ch, stop := start([]string{"--groups.defaults.group.initial.rebalance.delay.ms=0"},
		coordhost.WithDataPlane(cluster.ListenAddrs()...))
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	fmt.Println(consumeOnce(ctx, ch.KafkaAddr(), "greetings", "readers"))
	fmt.Println("committed, asked of the cluster:", committed(ctx, cluster.ListenAddrs()[0], "readers", "greetings"))
	// Output:
	// hello coordhost
	// committed, asked of the cluster: map[0:1]
}

// Coordhost on a record log of the program's own (here in memory) instead
// of the store under the data directory: the consumer group's records are
// appended to that log, in the partition Kafka's rule gives the group.
func Example_recordLog() {
	mem := runtime.NewMemLog()
	ch, stop := start([]string{"--store.partitions=8", "--groups.defaults.group.initial.rebalance.delay.ms=0"},
		coordhost.WithRecordLog(coordhost.MemRecordLog(mem)))
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	fmt.Println(consumeOnce(ctx, ch.KafkaAddr(), "greetings", "readers"))
	fmt.Println("committed:", committed(ctx, ch.KafkaAddr(), "readers", "greetings"))
	var written []int
	for p := range 8 {
		if mem.Len(p) > 0 {
			written = append(written, p)
		}
	}
	fmt.Println("log partitions written:", written, "readers' partition:", runtime.PartitionFor("readers", 8))
	// Output:
	// hello coordhost
	// committed: map[0:1]
	// log partitions written: [0] readers' partition: 0
}

// A custom task assignor in Go: groups whose streams.assignor.name is
// "round-robin" get their tasks from it. One KIP-1071 streams member joins
// with a topology reading a 4-partition topic and receives every task.
func Example_customAssignor() {
	var runs atomic.Int32
	roundRobin := func(req *abi.AssignRequest) (*abi.AssignResponse, error) {
		runs.Add(1)
		resp := &abi.AssignResponse{Members: make([]abi.MemberAssignment, len(req.Members)), NextProbeMs: -1}
		total := abi.NewTaskSpace(req.Subtopologies).Total()
		for t := int32(0); t < total; t++ {
			m := &resp.Members[int(t)%len(req.Members)]
			m.Active = append(m.Active, t)
		}
		return resp, nil
	}
	// Settings without a file: the same keys as flags (docs/CONFIG.md).
	ch, stop := start([]string{"--dataplane.partitions=4", "--groups.defaults.streams.assignor.name=round-robin",
		"--groups.defaults.streams.initial.rebalance.delay.ms=0", "--groups.defaults.streams.assignment.interval.ms=0"},
		coordhost.WithAssignor("round-robin", roundRobin))
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	cl, err := kgo.NewClient(kgo.SeedBrokers(ch.KafkaAddr()), kgo.AllowAutoTopicCreation())
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "clicks", Value: []byte("c")}).FirstErr(); err != nil {
		log.Fatal(err) // creates "clicks" with dataplane.partitions partitions
	}
	tasks, err := joinStreamsGroup(ctx, cl, "click-counter", "clicks")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("active tasks of subtopology 0:", tasks)
	fmt.Println("assigned by round-robin:", runs.Load() > 0)
	// Output:
	// active tasks of subtopology 0: [0 1 2 3]
	// assigned by round-robin: true
}

// start builds a configuration from flag-form settings (loopback
// ephemeral ports, a temporary data directory), starts coordhost with
// opts and returns it with the function that stops it and removes the
// directory.
func start(settings []string, opts ...coordhost.Option) (*coordhost.Coordhost, func()) {
	dir, err := os.MkdirTemp("", "coordhost-example-")
	if err != nil {
		log.Fatal(err)
	}
	base := []string{"--data.dir=" + dir, "--kafka.listen=127.0.0.1:0", "--admin.listen=127.0.0.1:0"}
	cfg, err := config.Load(append(base, settings...), nil, io.Discard)
	if err != nil {
		log.Fatal(err)
	}
	ch, err := coordhost.New(cfg, opts...)
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := ch.Start(ctx); err != nil {
		log.Fatal(err)
	}
	return ch, func() { ch.Shutdown(context.Background()); os.RemoveAll(dir) }
}

// consumeOnce produces value "hello coordhost" to topic, consumes it as a
// member of group and commits it; it returns the consumed value.
func consumeOnce(ctx context.Context, addr, topic, group string) string {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(), kgo.FetchMaxWait(time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("hello coordhost")}).FirstErr(); err != nil {
		log.Fatal(err)
	}
	fs := cl.PollRecords(ctx, 1)
	if err := fs.Err(); err != nil {
		log.Fatal(err)
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		log.Fatal(err)
	}
	return string(fs.Records()[0].Value)
}

// committed asks the Kafka endpoint at addr for group's committed offset
// of partition 0 of topic.
func committed(ctx context.Context, addr, group, topic string) map[int32]int64 {
	offsets, err := fetchCommitted(ctx, addr, group, topic, 1)
	if err != nil {
		log.Fatal(err)
	}
	return offsets
}

// fetchCommitted asks the Kafka endpoint at addr for group's committed
// offsets of partitions 0..parts-1 of topic, by partition.
func fetchCommitted(ctx context.Context, addr, group, topic string, parts int32) (map[int32]int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic = topic
	for p := int32(0); p < parts; p++ {
		rt.Partitions = append(rt.Partitions, p)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, fmt.Errorf("%s/%d: %w", t.Topic, p.Partition, err)
			}
			out[p.Partition] = p.Offset
		}
	}
	return out, nil
}

// joinStreamsGroup joins group as one KIP-1071 streams member whose
// topology reads source and heartbeats (bounded by ctx) until it is
// assigned active tasks; it returns their partitions. kgo routes only the
// group APIs it knows, so the heartbeats go straight to the coordinator.
func joinStreamsGroup(ctx context.Context, cl *kgo.Client, group, source string) ([]int32, error) {
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = group
	fresp, err := fc.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	coord := cl.Broker(int(fresp.NodeID))
	member, process := "member-1", "process-1"
	epoch := int32(0)
	for {
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch = group, member, epoch
		if epoch == 0 {
			req.RebalanceTimeoutMillis, req.ProcessID = 30000, &process
			req.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
				{SubtopologyID: "0", SourceTopics: []string{source}}}}
		}
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		resp, err := req.RequestWith(ctx, coord)
		if err != nil {
			return nil, err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return nil, err
		}
		epoch = resp.MemberEpoch
		for _, t := range resp.ActiveTasks {
			if t.SubtopologyID == "0" && len(t.Partitions) > 0 {
				ps := append([]int32(nil), t.Partitions...)
				sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
				return ps, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
