package host_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/coordhost/coordhost/internal/testtool"
)

// TestAutoCreatedTopicSurvivesKill: records produced to a topic the
// produce auto-created are still there, every one, after coordhost is
// SIGKILLed and restarted on its data directory.
func TestAutoCreatedTopicSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the coordhost binary")
	}
	autoCreatedSurvivesKill(t, func(ctx context.Context, addr, topic string) []string {
		prod := newClient(t, addr, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(topic))
		defer prod.Close()
		var values []string
		for i := 0; i < 20; i++ {
			v := fmt.Sprint(i)
			if err := prod.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
				t.Fatalf("produce %d: %v", i, err)
			}
			values = append(values, v)
		}
		return values
	})
}

// TestKcatAutoCreatedTopicSurvivesKill: the README's example, `echo hello |
// kcat -b … -t hello -P`, then a kill -9: the record is still there.
func TestKcatAutoCreatedTopicSurvivesKill(t *testing.T) {
	kcat := testtool.Require(t, "kcat")
	autoCreatedSurvivesKill(t, func(ctx context.Context, addr, topic string) []string {
		cmd := exec.CommandContext(ctx, kcat, "-b", addr, "-t", topic, "-P")
		cmd.Stdin = strings.NewReader("hello\n")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kcat -P: %v\n%s", err, out)
		}
		return []string{"hello"}
	})
}

// autoCreatedSurvivesKill runs produce against a fresh coordhost binary
// for a topic that does not exist yet, SIGKILLs coordhost, restarts it on
// the same data directory and reads the topic back from the start: every
// value produce returned (acknowledged) must be there.
func autoCreatedSurvivesKill(t *testing.T, produce func(ctx context.Context, addr, topic string) []string) {
	const topic = "hello"
	dataDir, port := t.TempDir(), freePort(t)
	p := startProc(t, dataDir, port, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	values := produce(ctx, p.addr, topic)
	p.kill()
	p = startProc(t, dataDir, port, 1)
	cons := newClient(t, p.addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := make(map[string]bool)
	pctx, pcancel := context.WithTimeout(ctx, 15*time.Second)
	defer pcancel()
	for len(got) < len(values) && pctx.Err() == nil {
		cons.PollFetches(pctx).EachRecord(func(r *kgo.Record) { got[string(r.Value)] = true })
	}
	for _, v := range values {
		if !got[v] {
			t.Fatalf("after a kill -9, %d of the %d acknowledged records of the auto-created topic %q were read back (%q missing)", len(got), len(values), topic, v)
		}
	}
}
