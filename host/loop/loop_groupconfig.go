package loop

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host/cluster"
	"github.com/coordhost/coordhost/host/config"
	"github.com/coordhost/coordhost/host/groupconfig"
	"github.com/coordhost/coordhost/host/store"
	"github.com/coordhost/coordhost/host/wire"
)

// Runtime group configs: DescribeConfigs, IncrementalAlterConfigs and
// AlterConfigs on GROUP resources, answered as package groupconfig says
// Kafka answers them. A group's runtime values are the top layer of
// its configuration (config.Groups.ExplainWith). An alter is applied to
// the loop's state and to core speculatively, its record is appended with
// the round's core records, and its answer is released only once the
// append is durable; a failed append undoes it (batch.undo).

// alterGroupConfigs answers IncrementalAlterConfigs or AlterConfigs whose
// resources are all GROUP resources (host/wire routes the others to the
// data plane).
func (l *Loop) alterGroupConfigs(ctx context.Context, req *wire.Request) (kmsg.Response, error) {
	rs, validateOnly := groupconfig.ParseAlter(req.Body)
	return l.do(ctx, req, event{mutate: func(c *core.Coordinator, _ int64, id core.RequestID) core.Output {
		results := groupconfig.Alter(rs, validateOnly, func(r groupconfig.Resource) (map[string]string, groupconfig.Result) {
			return l.proposeGroupConfig(r)
		}, func(group string, next map[string]string) { l.stageGroupConfig(c, group, next) })
		return core.Output{Responses: []core.Response{{Request: id, Msg: groupconfig.AlterResponse(req.Body, results)}}}
	}})
}

// proposeGroupConfig computes and validates a group's new runtime set.
func (l *Loop) proposeGroupConfig(r groupconfig.Resource) (map[string]string, groupconfig.Result) {
	if l.d.Groups == nil {
		return nil, groupconfig.InvalidRequest("runtime group configs are not available: this coordinator has no per-group configuration wired")
	}
	return groupconfig.Propose(r, groupconfig.Group{
		Runtime: l.dyn[r.Group],
		FileValue: func(name string) (raw string) {
			for _, s := range l.d.Groups.Explain(r.Group) {
				if s.Key == name {
					raw = config.FormatValue(s.Value)
				}
			}
			return raw
		},
		Check: func(next map[string]string) error { return l.checkEffective(r.Group, next) },
	})
}

// checkEffective validates the configuration a group would have with the
// runtime set dyn: the config file's rules, then core's, then that its
// assignor exists.
func (l *Loop) checkEffective(group string, dyn map[string]string) error {
	if err := l.d.Groups.CheckDynamic(group, dyn); err != nil {
		return err
	}
	g := l.d.Groups.ForWith(group, dyn)
	streams, classic, _ := g.CoreGroup()
	if err := streams.Validate(); err != nil {
		return err
	}
	if err := classic.Validate(core.DefaultClassicConfig()); err != nil {
		return err
	}
	if err := g.CoreConsumer().Validate(core.DefaultConsumerConfig()); err != nil {
		return err
	}
	if _, ok := dyn["streams.assignor.name"]; ok && l.d.Assignors != nil && !slices.Contains(l.d.Assignors.Names(), g.StreamsAssignorName) {
		return fmt.Errorf("streams.assignor.name = %q: no such assignor (have %s)", g.StreamsAssignorName, strings.Join(l.d.Assignors.Names(), ", "))
	}
	return nil
}

// stageGroupConfig applies a group's new runtime set speculatively and
// queues its record with the round's records.
func (l *Loop) stageGroupConfig(c *core.Coordinator, group string, next map[string]string) {
	old, had := l.dyn[group]
	l.setDyn(group, next)
	l.applyGroupConfig(c, group)
	b := l.batchOf(c)
	b.hostRecords = append(b.hostRecords, store.Record{Key: store.GroupConfigKey(group), Value: store.EncodeGroupConfig(next)})
	b.undo = append(b.undo, func() {
		if had {
			l.setDyn(group, old)
		} else {
			l.setDyn(group, nil)
		}
		l.applyGroupConfig(c, group)
	})
}

func (l *Loop) setDyn(group string, values map[string]string) {
	if len(values) == 0 {
		delete(l.dyn, group)
		return
	}
	l.dyn[group] = values
}

// forgetConfigs drops the runtime configs of partition p's groups on a
// node of a cluster, when p is unloaded or loads again: another node may
// change them meanwhile, so only the owner's replay holds them.
func (l *Loop) forgetConfigs(p int) {
	if l.d.Ownership == nil {
		return
	}
	l.dynMu.Lock()
	defer l.dynMu.Unlock()
	for g := range l.dyn {
		if l.rt.PartitionFor(g) == p {
			delete(l.dyn, g)
		}
	}
}

// replayGroupConfig loads a group-config record at start; host is false
// for core's records. A runtime set that the current config file makes
// invalid (say, a heartbeat interval no longer below the file's session
// timeout) is logged as an error and ignored until the group is altered
// again: failing start would leave no way to fix it.
func (l *Loop) replayGroupConfig(e store.Entry) (host bool, err error) {
	group, ok := store.GroupConfigGroup(e.Key)
	if !ok {
		return false, nil
	}
	values, err := store.DecodeGroupConfig(e.Value)
	if err != nil {
		return true, fmt.Errorf("replaying the runtime config of group %q (seq %d): %w", group, e.Seq, err)
	}
	if l.d.Groups != nil {
		if err := l.d.Groups.CheckDynamic(group, values); err != nil {
			l.log.Error("ignoring a group's stored runtime config: it is invalid over the current config file; alter the group's config to replace it",
				"group", group, "err", err)
			return true, nil
		}
	}
	l.setDyn(group, values)
	return true, nil
}

// maxConfiguredGroups bounds the set of group ids already configured.
const maxConfiguredGroups = 100000

// configure applies the group's per-group settings (config file layers
// and runtime values) to core the first time c's partition sees group.
// Called inside one of c's partition's events.
func (l *Loop) configure(c *core.Coordinator, group string) {
	s := l.shardOf(c)
	if s.configured[group] || l.d.Groups == nil {
		return
	}
	l.dynMu.RLock()
	defer l.dynMu.RUnlock()
	s.configure(group)
}

// configure is Loop.configure with dynMu already held.
func (s *shard) configure(group string) {
	l := s.l
	if s.configured[group] || l.d.Groups == nil {
		return
	}
	if len(s.configured) >= maxConfiguredGroups {
		// Applying a group's settings again is harmless; forgetting keeps
		// memory bounded when clients churn through group ids.
		clear(s.configured)
	}
	s.configured[group] = true
	l.applyGroupConfig(s.c, group)
}

// groupConfig is a group's effective configuration, runtime values
// included; without per-group configuration, every key's default. Called
// on the loop goroutine.
func (l *Loop) groupConfig(group string) config.Group {
	if l.d.Groups == nil {
		return noGroups.Defaults()
	}
	return l.d.Groups.ForWith(group, l.dyn[group])
}

// noGroups resolves every group to the keys' defaults.
var noGroups = &config.Groups{}

// applyGroupConfig hands a group's effective configuration (file layers
// plus runtime values) to core.
func (l *Loop) applyGroupConfig(c *core.Coordinator, group string) {
	g := l.ab.Split(group, l.groupConfig(group))
	streams, classic, migration := g.CoreGroup()
	streams.ProbingPolicy = l.probingPolicy(g)
	consumerMigration := g.CoreConsumerMigrationPolicy()
	now := l.nowMs()
	for _, in := range []core.Input{
		core.StreamsGroupConfig{Group: group, Overrides: streams},
		core.ClassicGroupConfig{Group: group, Overrides: classic},
		core.ConsumerGroupConfig{Group: group, Overrides: g.CoreConsumer()},
		core.StreamsMigrationPolicy{Group: group, Policy: &migration},
		core.ConsumerMigrationPolicy{Group: group, Policy: &consumerMigration},
	} {
		l.step(c, now, in) // settings: no records, no effects to hand on
	}
}

// groupSettings is a group's effective configuration with sources, runtime
// values included (read in the loop goroutine).
func (l *Loop) groupSettings(group string) []config.Setting {
	if l.d.Groups == nil {
		return nil
	}
	return l.d.Groups.ExplainWith(group, l.dyn[group])
}

// describeGroupConfigs answers DescribeConfigs for GROUP resources with
// each group's effective configuration, read on committed state of the
// group's partition; on a node of a cluster, the resources of a partition
// another node owns are answered by that node (onOwner).
func (l *Loop) describeGroupConfigs(ctx context.Context, req *wire.Request, body *kmsg.DescribeConfigsRequest) (kmsg.Response, error) {
	ans := newAnswers[kmsg.DescribeConfigsResponseResource](len(body.Resources))
	err := l.split(len(body.Resources), func(i int) string { return body.Resources[i].ResourceName }, func(idx []int) error {
		if len(idx) == 0 {
			return nil
		}
		sub := *body
		sub.Resources = pick(body.Resources, idx)
		subReq := *req
		subReq.Body = &sub
		p := l.rt.PartitionFor(sub.Resources[0].ResourceName)
		r, err := l.onOwner(ctx, &subReq, p, func() (kmsg.Response, error) {
			resp := kmsg.NewPtrDescribeConfigsResponse()
			resp.SetVersion(req.Version)
			if err := l.readOn(ctx, p, func(*core.Coordinator, int64) core.Output {
				for _, r := range sub.Resources {
					resp.Resources = append(resp.Resources, l.describeGroupConfig(&sub, r))
				}
				return core.Output{}
			}); err != nil {
				return submitError(&subReq, err), nil
			}
			return resp, nil
		})
		if dr, ok := r.(*kmsg.DescribeConfigsResponse); ok {
			ans.put(idx, dr.Resources)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	resp := kmsg.NewPtrDescribeConfigsResponse()
	resp.SetVersion(req.Version)
	resp.Resources = ans.all()
	return resp, nil
}

func (l *Loop) describeGroupConfig(body *kmsg.DescribeConfigsRequest, r kmsg.DescribeConfigsRequestResource) kmsg.DescribeConfigsResponseResource {
	var file []config.Setting
	if l.d.Groups != nil && r.ResourceName != "" {
		file = l.d.Groups.Explain(r.ResourceName)
	}
	return groupconfig.Describe(body, r, l.groupSettings(r.ResourceName), file)
}

// listGroupConfigResources answers ListConfigResources for GROUP: the
// groups that have runtime configs, in name order. A node of a cluster
// lists the groups of the partitions it answers for and asks each other
// node for the groups of the partitions that node owns (clusterConfigs).
func (l *Loop) listGroupConfigResources(ctx context.Context, req *wire.Request) (kmsg.Response, error) {
	if l.d.Ownership == nil {
		return l.readResponse(ctx, req, func(*core.Coordinator) kmsg.Response {
			return groupconfig.ListResources(slices.Collect(maps.Keys(l.dyn)))
		})
	}
	if cluster.Forwarded(req.ClientIDString()) {
		groups, _, err := l.localConfigs(ctx)
		if err != nil {
			return submitError(req, err), nil
		}
		resp := groupconfig.ListResources(groups)
		resp.SetVersion(req.Version)
		return resp, nil
	}
	return untilOwned(ctx, req, func() (kmsg.Response, error) {
		groups, complete, err := l.clusterConfigs(ctx)
		if err != nil || !complete {
			return nil, err
		}
		resp := groupconfig.ListResources(groups)
		resp.SetVersion(req.Version)
		return resp, nil
	})
}

// localConfigs lists the groups with runtime configs of the partitions
// this node answers for, each read on committed state of its partition;
// covered marks the partitions read. A partition that is loading fails
// the read with its error.
func (l *Loop) localConfigs(ctx context.Context) (groups []string, covered []bool, err error) {
	covered = make([]bool, l.rt.Partitions())
	err = l.read(ctx, func(c *core.Coordinator, _ int64) core.Output {
		p := l.shardOf(c).p
		covered[p] = true
		for g := range l.dyn {
			if l.rt.PartitionFor(g) == p {
				groups = append(groups, g)
			}
		}
		return core.Output{}
	})
	return groups, covered, err
}

// clusterConfigs lists the groups with runtime configs of every
// partition of the cluster, each partition from the node that owns it:
// this node's own, and each other node's as that node answers for the
// partitions the ownership group last assigned it. complete is false
// while some partition has no owner that answered (it is moving or
// loading).
func (l *Loop) clusterConfigs(ctx context.Context) (groups []string, complete bool, err error) {
	own := l.d.Ownership
	groups, covered, err := l.localConfigs(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		return nil, false, nil
	}
	byPeer := map[int32][]int{}
	peers := map[int32]cluster.Peer{}
	for p := range covered {
		if covered[p] {
			continue
		}
		if peer, ok := own.Route(p); ok && peer.BrokerID != own.Self().BrokerID {
			byPeer[peer.BrokerID] = append(byPeer[peer.BrokerID], p)
			peers[peer.BrokerID] = peer
		}
	}
	for id, ps := range byPeer {
		fr := kmsg.NewPtrListConfigResourcesRequest()
		fr.ResourceTypes = []int8{int8(kmsg.ConfigResourceTypeGroupConfig)}
		r, err := own.Forward(ctx, peers[id], fr)
		if err != nil {
			l.log.Debug("listing a node's group configs failed", "node", peers[id].Node, "err", err)
			continue
		}
		resp, ok := r.(*kmsg.ListConfigResourcesResponse)
		if !ok || resp.ErrorCode != 0 {
			continue
		}
		for _, rc := range resp.ConfigResources {
			if rc.Type == int8(kmsg.ConfigResourceTypeGroupConfig) && slices.Contains(ps, l.rt.PartitionFor(rc.Name)) {
				groups = append(groups, rc.Name)
			}
		}
		for _, p := range ps {
			covered[p] = true
		}
	}
	return groups, !slices.Contains(covered, false), nil
}

// Group configs on a node of a cluster: a request about the groups of a
// partition another node owns is answered by that node, as any Kafka
// broker answers group configs (they live in Kafka's metadata log). The
// node sends it there as a client would (cluster.Node.Forward), and
// retries, within forwardWait, while the partition has no owner that
// answers (it is moving or loading).
const (
	forwardWait  = 10 * time.Second
	forwardRetry = 50 * time.Millisecond
)

// onOwner answers req, whose groups all are in partition p, with here()
// when this node answers for p (or runs without a cluster, or req was
// forwarded by another node: it is not forwarded again), else with the
// answer of p's owner. An answer saying the partition is loading or has
// moved is retried (a retried alter sets the same values again).
func (l *Loop) onOwner(ctx context.Context, req *wire.Request, p int, here func() (kmsg.Response, error)) (kmsg.Response, error) {
	own := l.d.Ownership
	if own == nil || cluster.Forwarded(req.ClientIDString()) {
		return here()
	}
	return untilOwned(ctx, req, func() (kmsg.Response, error) {
		if l.serving(p) == nil {
			resp, err := here()
			if err == nil && groupconfig.OwnerMoving(resp) { // loading here, or given up meanwhile
				return nil, ctx.Err()
			}
			return resp, err
		}
		peer, ok := own.Route(p)
		if !ok {
			return nil, nil
		}
		resp, err := own.Forward(ctx, peer, req.Body)
		if err != nil || groupconfig.OwnerMoving(resp) {
			l.log.Debug("forwarding a group config request to its owner failed; retrying", "partition", p, "node", peer.Node, "err", err)
			return nil, ctx.Err()
		}
		resp.SetVersion(req.Version)
		return resp, nil
	})
}

// untilOwned returns try's first answer, trying again while it answers
// nothing (a partition it needs has no owner that answered), with
// backoff, for at most forwardWait; then req is answered
// COORDINATOR_NOT_AVAILABLE (a retriable error).
func untilOwned(ctx context.Context, req *wire.Request, try func() (kmsg.Response, error)) (kmsg.Response, error) {
	deadline := time.Now().Add(forwardWait)
	for wait := forwardRetry; ; wait = min(2*wait, time.Second) {
		resp, err := try()
		if resp != nil || err != nil {
			return resp, err
		}
		if time.Now().After(deadline) {
			return wire.ErrorResponse(req.Body, kerr.CoordinatorNotAvailable.Code), nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}
