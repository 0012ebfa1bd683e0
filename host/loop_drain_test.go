package host_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host"
	"github.com/coordhost/coordhost/host/config"
)

// TestDrainAnswersParkedRequests: a JoinGroup parked in a rebalance that
// would last the rebalance timeout (60 s) does not hold up a drain: the
// loop ends its last round, answers the parked request NOT_COORDINATOR and
// the server stops within seconds.
func TestDrainAnswersParkedRequests(t *testing.T) {
	cfg, err := config.Load(append([]string{"--data.dir=" + t.TempDir(), "--kafka.listen=127.0.0.1:0", "--admin.listen=127.0.0.1:0",
		"--plugins.dir=" + t.TempDir()}, fastGroups...), nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := host.Start(ctx, host.Options{Config: cfg, Coordinator: host.NewCoordinator, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	cl := &coordinator{cl: newClient(t, srv.KafkaAddr())}
	first := &classicMember{cl: cl, group: "dg"}
	if err := first.join(ctx); err != nil {
		t.Fatal(err)
	}
	// A second member's join starts a rebalance the first member never
	// rejoins: the JoinGroup is parked for the 60 s rebalance timeout.
	answered := make(chan int16, 1)
	go func() {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType = "dg", "", "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 60000, 60000
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}}}
		for {
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				answered <- -1
				return
			}
			if resp.ErrorCode == kerr.MemberIDRequired.Code {
				req.MemberID = resp.MemberID
				continue
			}
			answered <- resp.ErrorCode
			return
		}
	}()
	time.Sleep(500 * time.Millisecond) // let the join park
	select {
	case code := <-answered:
		t.Fatalf("the second join was answered before the drain: %d", code)
	default:
	}
	start := time.Now()
	dctx, dcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer dcancel()
	if err := srv.Shutdown(dctx); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("drain took %v with a parked JoinGroup", took)
	}
	select {
	case code := <-answered:
		if code != kerr.NotCoordinator.Code && code != -1 {
			t.Fatalf("parked JoinGroup answered %v, want NOT_COORDINATOR (or a closed connection)", kerr.ErrorForCode(code))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("parked JoinGroup never answered")
	}
}
