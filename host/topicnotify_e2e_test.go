package host_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host"
)

// TestCreatedTopicSeenAtOnce: a streams group whose source topic does not
// exist is missing topics; a CreateTopics through coordhost makes the
// coordinator refresh its topic image at once, so the member's next
// heartbeats see the topic and get its tasks long before the periodic
// refresh (an hour here) could have run.
func TestCreatedTopicSeenAtOnce(t *testing.T) {
	t.Cleanup(host.SetTopicRefresh(time.Hour))
	srv := startLoopHost(t, "")
	ctx := timeout(t)
	kc := newClient(t, srv.KafkaAddr())
	cl := &coordinator{cl: kc}
	const group, source = "tn-app", "tn-in"
	var epoch int32
	heartbeat := func() (*kmsg.StreamsGroupHeartbeatResponse, error) {
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch = group, "m1", epoch
		if epoch == 0 {
			proc := "p1"
			req.RebalanceTimeoutMillis, req.ProcessID = 30000, &proc
			req.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
				{SubtopologyID: "0", SourceTopics: []string{source}}}}
		}
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return nil, err
		}
		if resp.ErrorCode != 0 {
			return nil, kerr.ErrorForCode(resp.ErrorCode)
		}
		epoch = resp.MemberEpoch
		return resp, nil
	}
	const missingSourceTopics = 1 // StreamsGroupHeartbeatResponse status code
	missing := func(resp *kmsg.StreamsGroupHeartbeatResponse) bool {
		for _, s := range resp.Status {
			if s.StatusCode == missingSourceTopics {
				return true
			}
		}
		return false
	}
	activeTasks := func(resp *kmsg.StreamsGroupHeartbeatResponse) int {
		n := 0
		for _, tk := range resp.ActiveTasks {
			n += len(tk.Partitions)
		}
		return n
	}

	resp, err := heartbeat()
	if err != nil {
		t.Fatal(err)
	}
	if !missing(resp) || activeTasks(resp) != 0 {
		t.Fatalf("before the topic exists: status %+v, %d active tasks; want missing source topics and no task", resp.Status, activeTasks(resp))
	}
	if err := createTopic(ctx, kc, source, 2); err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	// Bounded well below the hour-long periodic refresh, with room for a
	// loaded machine; the trigger usually lands within a few milliseconds.
	deadline := created.Add(time.Second)
	for {
		resp, err := heartbeat()
		if err != nil {
			t.Fatal(err)
		}
		if !missing(resp) && activeTasks(resp) == 2 {
			t.Logf("topic seen and its 2 tasks assigned %v after the CreateTopics response", time.Since(created))
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(fmt.Errorf("1 s after the CreateTopics response: status %+v, %d active tasks", resp.Status, activeTasks(resp)))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
