package host_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/core/records"
	"github.com/coordhost/coordhost/host/loop"
	"github.com/coordhost/coordhost/host/runtime"
	"github.com/coordhost/coordhost/host/store"
	"github.com/coordhost/coordhost/host/wire"
)

func newTestCore() (*core.Coordinator, error) {
	cfg := core.DefaultConfig()
	cfg.Streams.InitialRebalanceDelayMs, cfg.Streams.AssignmentIntervalMs = 0, 0
	c, err := core.New(cfg)
	if err != nil {
		return nil, err
	}
	c.Step(time.Now().UnixMilli(), core.Topics{Topics: []core.TopicMetadata{{Name: "in", ID: [16]byte{1}, Partitions: 4}}})
	c.Commit()
	return c, nil
}

func joinRequest(group, member string) *kmsg.StreamsGroupHeartbeatRequest {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version = 1
	proc := "p-" + member
	req.Group, req.MemberID, req.RebalanceTimeoutMillis, req.ProcessID = group, member, 30000, &proc
	req.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
		{SubtopologyID: "0", SourceTopics: []string{"in"}}}}
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	return req
}

// writeOldStore writes groups' records the way coordhost wrote its store
// before partitions: core's records of a member joining each group, and a
// runtime group config, appended to the one log.
func writeOldStore(t *testing.T, path string, groups []string) {
	t.Helper()
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := newTestCore()
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range groups {
		out, err := c.Step(time.Now().UnixMilli(), core.Request{ID: core.RequestID(i + 1), Client: core.ClientInfo{ClientID: "c"}, Body: joinRequest(g, "m-"+g)})
		if err != nil {
			t.Fatal(err)
		}
		c.Commit()
		var recs []store.Record
		for _, r := range out.Records {
			k, v := records.EncodeRecord(r)
			recs = append(recs, store.Record{Key: k, Value: v})
		}
		if len(recs) == 0 {
			t.Fatalf("group %s: core wrote no records", g)
		}
		if _, err := st.Append(recs); err != nil {
			t.Fatal(err)
		}
	}
	cfg := store.Record{Key: store.GroupConfigKey(groups[0]), Value: store.EncodeGroupConfig(map[string]string{"streams.num.standby.replicas": "1"})}
	if _, err := st.Append([]store.Record{cfg}); err != nil {
		t.Fatal(err)
	}
}

func startPartitioned(t *testing.T, path string, parts int) (*loop.Loop, *store.Store, error) {
	t.Helper()
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	l, err := loop.New(loop.Deps{NewCore: newTestCore, Partitions: parts, Store: st})
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return l, st, nil
}

func listGroupIDs(t *testing.T, l *loop.Loop) []string {
	t.Helper()
	req := kmsg.NewPtrListGroupsRequest()
	req.Version = 5
	resp, err := l.Handle(context.Background(), &wire.Request{Key: req.Key(), Version: req.Version, Body: req})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, g := range resp.(*kmsg.ListGroupsResponse).Groups {
		ids = append(ids, g.Group)
	}
	return ids
}

// TestLoopConvertsAStoreWrittenBeforePartitions: a store of the one-log
// layout is converted when the loop first opens it: every group is found
// again in its partition (ListGroups gathers all partitions; a describe of
// several groups is split and merged in request order), the default
// partition count is recorded, and a start with another count is refused
// with an error that says which count the store has.
func TestLoopConvertsAStoreWrittenBeforePartitions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "coordhost.db")
	groups := []string{"orders", "payments", "polygenelubricants", "app-7", "app-8", "zeta"}
	writeOldStore(t, path, groups)
	parts := map[int]bool{}
	for _, g := range groups {
		parts[runtime.PartitionFor(g, runtime.DefaultPartitions)] = true
	}
	if len(parts) < 4 {
		t.Fatalf("the groups share too few partitions (%d) to test routing", len(parts))
	}

	l, st, err := startPartitioned(t, path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if st.Partitions() != runtime.DefaultPartitions {
		t.Fatalf("store has %d partitions, want %d", st.Partitions(), runtime.DefaultPartitions)
	}
	want := slices.Sorted(slices.Values(groups))
	if got := listGroupIDs(t, l); !slices.Equal(got, want) {
		t.Fatalf("groups after conversion: %v, want %v", got, want)
	}
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Version, req.Groups = 0, []string{"zeta", "orders", "missing", "app-7"}
	resp, err := l.Handle(context.Background(), &wire.Request{Key: req.Key(), Version: req.Version, Body: req})
	if err != nil {
		t.Fatal(err)
	}
	var described []string
	for _, g := range resp.(*kmsg.StreamsGroupDescribeResponse).Groups {
		described = append(described, fmt.Sprintf("%s:%d:%d", g.Group, g.ErrorCode, len(g.Members)))
	}
	if got := strings.Join(described, " "); got != "zeta:0:1 orders:0:1 missing:69:0 app-7:0:1" {
		t.Fatalf("describe across partitions: %s", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Shutdown(ctx); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
	st.Close()

	if _, _, err := startPartitioned(t, path, 7); err == nil || !strings.Contains(err.Error(), "created with 50 partitions") {
		t.Fatalf("start with another partition count: %v", err)
	}
	l, st, err = startPartitioned(t, path, runtime.DefaultPartitions)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	defer l.Shutdown(context.Background())
	if got := listGroupIDs(t, l); !slices.Equal(got, want) {
		t.Fatalf("groups after a restart: %v, want %v", got, want)
	}
}

// TestLoopStartEndsWithItsContext: a start whose context has ended (a
// signal during start-up) fails instead of loading the partitions.
func TestLoopStartEndsWithItsContext(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "coordhost.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l, err := loop.NewContext(ctx, loop.Deps{NewCore: newTestCore, Store: st})
	if !errors.Is(err, context.Canceled) {
		if l != nil {
			l.Shutdown(context.Background())
		}
		t.Fatalf("start with an ended context: %v", err)
	}
}
