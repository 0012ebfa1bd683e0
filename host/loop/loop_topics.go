package loop

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host/gateway"
)

// Topic metadata flows from the data plane into core: a background
// goroutine lists the data plane's topics every TopicRefresh (and at once
// after a topic was created through coordhost: by the loop for a streams
// group, or by a client's CreateTopics or auto-creation, TopicsCreated)
// and, when anything changed, hands the
// new image to core with UpdateTopics.

func (l *Loop) refreshTopicsLoop() {
	defer l.wg.Done()
	t := time.NewTicker(l.d.TopicRefresh)
	defer t.Stop()
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-t.C:
			l.refreshTopics()
		case <-l.refreshNow:
			l.refreshTopics()
		}
	}
}

// refreshTopicsNow loads the topic image synchronously (before the
// partitions load, so each partition's Loaded sees the topics).
func (l *Loop) refreshTopicsNow() {
	ts, sig, err := l.fetchTopics()
	if err != nil {
		l.log.Warn("topic metadata refresh failed", "err", err)
		return
	}
	l.topicSig, l.topics = sig, ts
}

func (l *Loop) refreshTopics() {
	ts, sig, err := l.fetchTopics()
	if err != nil {
		l.log.Warn("topic metadata refresh failed", "err", err)
		return
	}
	l.sigMu.Lock()
	changed := sig != l.topicSig
	l.topicSig = sig
	l.sigMu.Unlock()
	if changed {
		l.input(func(c *core.Coordinator, now int64) core.Output { return l.step(c, now, core.Topics{Topics: ts}) })
	}
}

func (l *Loop) fetchTopics() ([]core.TopicMetadata, string, error) {
	ctx, cancel := context.WithTimeout(l.ctx, 10*time.Second)
	defer cancel()
	infos, err := l.d.DataPlane.Topics(ctx)
	if err != nil {
		return nil, "", err
	}
	out := make([]core.TopicMetadata, 0, len(infos))
	var sig strings.Builder
	for _, ti := range infos {
		if ti.Err != nil {
			continue
		}
		tm := core.TopicMetadata{Name: ti.Name, ID: ti.ID, Partitions: int32(len(ti.Partitions))}
		parts := append([]gateway.PartitionInfo(nil), ti.Partitions...)
		sort.Slice(parts, func(i, j int) bool { return parts[i].Partition < parts[j].Partition })
		hasRacks := false
		racks := make([][]string, len(parts))
		for i, p := range parts {
			for _, r := range p.Racks {
				if r != "" {
					racks[i] = append(racks[i], r)
					hasRacks = true
				}
			}
		}
		if hasRacks {
			tm.Racks = racks
		}
		out = append(out, tm)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	for _, t := range out {
		fmt.Fprintf(&sig, "%s/%x/%d/%v;", t.Name, t.ID, t.Partitions, t.Racks)
	}
	return out, sig.String(), nil
}

// createTopics creates internal topics core asked for, then refreshes the
// topic image. Called on the loop goroutine; the work runs beside it.
func (l *Loop) createTopics(ts []core.TopicToCreate) {
	specs := make([]gateway.TopicSpec, 0, len(ts))
	for _, t := range ts {
		spec := gateway.TopicSpec{Name: t.Name, Partitions: t.Partitions, ReplicationFactor: t.ReplicationFactor}
		if len(t.Configs) > 0 {
			spec.Configs = map[string]string{}
			for _, kv := range t.Configs {
				spec.Configs[kv.Key] = kv.Value
			}
		}
		specs = append(specs, spec)
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		ctx, cancel := context.WithTimeout(l.ctx, 30*time.Second)
		defer cancel()
		res, err := l.d.DataPlane.CreateTopics(ctx, specs)
		if err != nil {
			l.log.Warn("creating internal topics failed", "err", err)
		}
		for name, e := range res {
			if e != nil {
				l.log.Warn("internal topic not created", "topic", name, "err", e)
			} else {
				l.log.Info("internal topic created", "topic", name)
			}
		}
		l.TopicsCreated()
	}()
}

// TopicsCreated asks for a topic metadata refresh at once, without
// waiting for the next periodic one; calls made while one is pending
// coalesce into it. It never blocks.
func (l *Loop) TopicsCreated() {
	select {
	case l.refreshNow <- struct{}{}:
	default:
	}
}

// heldTopics are, per streams group, the internal topics its last
// heartbeat found missing, kept for the client to create
// (Deps.ClientCreatesInternalTopics): in front of an authenticated
// cluster they are never created under coordhost's own identity.
type heldTopics struct {
	mu sync.Mutex
	m  map[string][]core.TopicToCreate
}

// holdInternalTopics keeps ts for InternalTopicsToCreate and returns
// nothing to create as coordhost, or returns ts unchanged without
// ClientCreatesInternalTopics. Called before the responses that report
// the topics missing are released.
func (l *Loop) holdInternalTopics(ts []core.TopicToCreate) []core.TopicToCreate {
	if !l.d.ClientCreatesInternalTopics || len(ts) == 0 {
		return ts
	}
	byGroup := map[string][]core.TopicToCreate{}
	for _, t := range ts {
		byGroup[t.Group] = append(byGroup[t.Group], t)
	}
	l.held.mu.Lock()
	defer l.held.mu.Unlock()
	if l.held.m == nil {
		l.held.m = map[string][]core.TopicToCreate{}
	}
	for g, gts := range byGroup {
		l.held.m[g] = gts
	}
	return nil
}

// InternalTopicsToCreate lists the internal topics group's last heartbeat
// found missing, as CreateTopics topics, for host/authz to create over
// the client's session; nil without ClientCreatesInternalTopics.
func (l *Loop) InternalTopicsToCreate(group string) []kmsg.CreateTopicsRequestTopic {
	l.held.mu.Lock()
	ts := l.held.m[group]
	l.held.mu.Unlock()
	out := make([]kmsg.CreateTopicsRequestTopic, 0, len(ts))
	for _, t := range ts {
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = t.Name, t.Partitions, t.ReplicationFactor
		for _, kv := range t.Configs {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = kv.Key, kmsg.StringPtr(kv.Value)
			ct.Configs = append(ct.Configs, c)
		}
		out = append(out, ct)
	}
	return out
}

// InternalTopicsCreated is told that the client created group's internal
// topics: they are no longer held, and the topic image is refreshed.
func (l *Loop) InternalTopicsCreated(group string) {
	l.held.mu.Lock()
	delete(l.held.m, group)
	l.held.mu.Unlock()
	l.TopicsCreated()
}
