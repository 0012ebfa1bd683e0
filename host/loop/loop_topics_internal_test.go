package loop

import (
	"testing"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/core/records"
)

// In front of an authenticated cluster the loop creates no internal topic
// itself: it holds them per group for host/authz, which creates them over
// the client's session.
func TestInternalTopicsHeldForTheClient(t *testing.T) {
	ts := []core.TopicToCreate{
		{Group: "a", Name: "a-s-changelog", Partitions: 2, ReplicationFactor: -1, Configs: []records.KeyValue{{Key: "cleanup.policy", Value: "compact"}}},
		{Group: "b", Name: "b-r-repartition", Partitions: 3, ReplicationFactor: 1},
	}
	own := &Loop{refreshNow: make(chan struct{}, 1)}
	if got := own.holdInternalTopics(ts); len(got) != 2 {
		t.Fatalf("without ClientCreatesInternalTopics: %v", got)
	}
	if len(own.InternalTopicsToCreate("a")) != 0 {
		t.Fatal("held without ClientCreatesInternalTopics")
	}

	l := &Loop{d: Deps{ClientCreatesInternalTopics: true}, refreshNow: make(chan struct{}, 1)}
	if got := l.holdInternalTopics(ts); len(got) != 0 {
		t.Fatalf("left %v for coordhost to create", got)
	}
	a := l.InternalTopicsToCreate("a")
	if len(a) != 1 || a[0].Topic != "a-s-changelog" || a[0].NumPartitions != 2 || a[0].ReplicationFactor != -1 ||
		len(a[0].Configs) != 1 || a[0].Configs[0].Name != "cleanup.policy" || *a[0].Configs[0].Value != "compact" {
		t.Fatalf("group a: %+v", a)
	}
	if b := l.InternalTopicsToCreate("b"); len(b) != 1 || b[0].Topic != "b-r-repartition" || b[0].NumPartitions != 3 {
		t.Fatalf("group b: %+v", b)
	}
	l.InternalTopicsCreated("a")
	if len(l.InternalTopicsToCreate("a")) != 0 || len(l.InternalTopicsToCreate("b")) != 1 {
		t.Fatal("created topics still held, or another group's dropped")
	}
	select {
	case <-l.refreshNow:
	default:
		t.Fatal("no topic refresh asked after the creation")
	}
}
