package host_test

import (
	"context"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host"
	"github.com/coordhost/coordhost/host/config"
	"github.com/coordhost/coordhost/host/loop"
	"github.com/coordhost/coordhost/host/store"
	"github.com/coordhost/coordhost/host/wire"
)

// TestGroupConfigAppendFailureUndone: an alter whose record cannot be
// stored is answered NOT_COORDINATOR and its speculative effect is undone:
// DescribeConfigs still shows the old value.
func TestGroupConfigAppendFailureUndone(t *testing.T) {
	cfg, err := config.Load(nil, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	c, err := core.New(host.CoreConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(t.TempDir(), "coordhost.db"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := loop.New(loop.Deps{Core: c, Store: st, Groups: cfg.Groups})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	t.Cleanup(func() { _ = l.Shutdown(ctx) })
	handle := func(req kmsg.Request) kmsg.Response {
		t.Helper()
		resp, err := l.Handle(ctx, &wire.Request{Key: req.Key(), Version: req.GetVersion(), Body: req})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	alter.Version = 1
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "g"
	r.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("streams.heartbeat.interval.ms", "6000")}
	alter.Resources = append(alter.Resources, r)
	if err := st.Close(); err != nil { // every append now fails
		t.Fatal(err)
	}
	if code := handle(alter).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode; code != kerr.NotCoordinator.Code {
		t.Fatalf("alter with a failing store: %v, want NOT_COORDINATOR", kerr.ErrorForCode(code))
	}
	describe := kmsg.NewPtrDescribeConfigsRequest()
	describe.Version = 4
	d := kmsg.NewDescribeConfigsRequestResource()
	d.ResourceType, d.ResourceName, d.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, "g", []string{"streams.heartbeat.interval.ms"}
	describe.Resources = append(describe.Resources, d)
	got := handle(describe).(*kmsg.DescribeConfigsResponse).Resources[0].Configs
	if len(got) != 1 || deref(got[0].Value) != "5000" || got[0].Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("after the failed alter: %+v, want the default 5000", got)
	}
}
