package interop

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testCutOver: coordhost started in front of the broker while the
// broker's own group coordinator runs group gcut (a kgo consumer straight
// to the broker) answers gcut's JoinGroup and Heartbeat
// COORDINATOR_NOT_AVAILABLE and names the group at start, while it
// serves another group; once the broker's member left (the broker's
// group is Empty), coordhost serves gcut.
func testCutOver(t *testing.T, dir, secure, plain string, admin *kgo.Client) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	direct, err := kgo.NewClient(kgo.SeedBrokers(plain), kgo.ConsumerGroup("gcut"), kgo.ConsumeTopics("t"))
	if err != nil {
		t.Fatal(err)
	}
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for ctx.Err() == nil {
			direct.PollFetches(ctx)
		}
	}()
	brokerState := func() string {
		t.Helper()
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{"gcut"}
		dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer dcancel()
		resp, err := req.RequestWith(dctx, admin)
		if err != nil || len(resp.Groups) != 1 {
			t.Fatalf("DescribeGroups gcut on the broker: %v %+v", err, resp)
		}
		return resp.Groups[0].State
	}
	waitState := func(want string) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); brokerState() != want; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the broker's group gcut is %s after 60s, want %s", brokerState(), want)
			}
		}
	}
	waitState("Stable")

	ch := startCoordhost(t, dir, secure, "--dataplane.sasl.mechanism=SCRAM-SHA-256",
		"--dataplane.sasl.username=admin", "--dataplane.sasl.password="+adminPassword)
	if lines := ch.proc.grepWithin(5*time.Second, "group=gcut"); len(lines) == 0 {
		t.Error("coordhost's start does not name the held group gcut")
	}
	through := dialKafka(t, ch.addr)
	if err := through.login("admin", "SCRAM-SHA-256"); err != nil {
		t.Fatal(err)
	}
	join := func(group string) int16 {
		t.Helper()
		req := kmsg.NewPtrJoinGroupRequest()
		req.SetVersion(9)
		req.Group, req.ProtocolType = group, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 30000
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 0}}}
		resp, err := through.do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.JoinGroupResponse).ErrorCode
	}
	if code := join("gcut"); code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("JoinGroup gcut through coordhost while the broker runs it: %v, want COORDINATOR_NOT_AVAILABLE", kerr.ErrorForCode(code))
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.SetVersion(4)
	hb.Group, hb.MemberID, hb.Generation = "gcut", "m", 1
	if resp, err := through.do(hb); err != nil || resp.(*kmsg.HeartbeatResponse).ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("Heartbeat gcut through coordhost while the broker runs it: %v %+v", err, resp)
	}
	if code := join("gcut-other"); code != kerr.MemberIDRequired.Code {
		t.Fatalf("JoinGroup of a group the broker does not run: %v, want MEMBER_ID_REQUIRED", kerr.ErrorForCode(code))
	}

	cancel()
	<-polled
	direct.Close() // leaves the broker's group
	waitState("Empty")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		code := join("gcut")
		if code == kerr.MemberIDRequired.Code {
			break
		}
		if code != kerr.CoordinatorNotAvailable.Code || time.Now().After(deadline) {
			t.Fatalf("JoinGroup gcut through coordhost after the broker's group emptied: %v, want MEMBER_ID_REQUIRED", kerr.ErrorForCode(code))
		}
	}
	if lines := ch.proc.grepWithin(5*time.Second, "serves it from now on"); len(lines) == 0 {
		t.Error("coordhost did not log that it serves gcut now")
	}
}
