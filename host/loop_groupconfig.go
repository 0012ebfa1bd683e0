package host

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
	"github.com/coordhost/coordhost/host/store"
	"github.com/coordhost/coordhost/host/wire"
)

// Runtime group configs: DescribeConfigs, IncrementalAlterConfigs and
// AlterConfigs on GROUP resources, as Kafka 4.4's controller
// (ConfigurationControlManager, ControllerConfigurationValidator) and
// GroupConfig answer them. A group's runtime values are the top layer of
// its configuration (config.Groups.ExplainWith). An alter is applied to
// the loop's state and to core speculatively, its record is appended with
// the round's core records, and its answer is released only once the
// append is durable; a failed append undoes it (batch.undo).

// alterOp is one requested change of a GROUP resource.
type alterOp struct {
	name  string
	op    kmsg.IncrementalAlterConfigOp
	value *string
}

// alterResource is one GROUP resource of an alter request; replace is set
// for the legacy AlterConfigs, whose set replaces the group's whole set.
type alterResource struct {
	group   string
	ops     []alterOp
	replace bool
}

// alterResult is a resource's answer (code 0: applied or valid).
type alterResult struct {
	code int16
	msg  string
}

// alterGroupConfigs answers IncrementalAlterConfigs or AlterConfigs whose
// resources are all GROUP resources (host/wire routes the others to the
// data plane).
func (l *Loop) alterGroupConfigs(ctx context.Context, req *wire.Request) (kmsg.Response, error) {
	var rs []alterResource
	var validateOnly bool
	switch body := req.Body.(type) {
	case *kmsg.IncrementalAlterConfigsRequest:
		validateOnly = body.ValidateOnly
		for _, r := range body.Resources {
			ar := alterResource{group: r.ResourceName}
			for _, c := range r.Configs {
				ar.ops = append(ar.ops, alterOp{name: c.Name, op: c.Op, value: c.Value})
			}
			rs = append(rs, ar)
		}
	case *kmsg.AlterConfigsRequest:
		validateOnly = body.ValidateOnly
		for _, r := range body.Resources {
			ar := alterResource{group: r.ResourceName, replace: true}
			for _, c := range r.Configs {
				ar.ops = append(ar.ops, alterOp{name: c.Name, op: kmsg.IncrementalAlterConfigOpSet, value: c.Value})
			}
			rs = append(rs, ar)
		}
	}
	return l.do(ctx, req, event{mutate: func(c *core.Coordinator, _ int64, id core.RequestID) core.Output {
		results := l.alterGroups(c, rs, validateOnly)
		return core.Output{Responses: []core.Response{{Request: id, Msg: alterResponse(req.Body, results)}}}
	}})
}

// alterGroups decides (and unless validateOnly stages) every resource.
func (l *Loop) alterGroups(c *core.Coordinator, rs []alterResource, validateOnly bool) []alterResult {
	out := make([]alterResult, len(rs))
	seen := map[string]int{}
	for _, r := range rs {
		seen[r.group]++
	}
	for i, r := range rs {
		if seen[r.group] > 1 {
			out[i] = alterResult{kerr.InvalidRequest.Code, "Each resource must appear at most once."}
			continue
		}
		next, res := l.proposeGroupConfig(c, r)
		if res.code == 0 && !validateOnly {
			l.stageGroupConfig(c, r.group, next)
		}
		out[i] = res
	}
	return out
}

// proposeGroupConfig computes and validates a group's new runtime set.
func (l *Loop) proposeGroupConfig(c *core.Coordinator, r alterResource) (map[string]string, alterResult) {
	invalidRequest := func(msg string) (map[string]string, alterResult) {
		return nil, alterResult{kerr.InvalidRequest.Code, msg}
	}
	invalidConfig := func(err error) (map[string]string, alterResult) {
		return nil, alterResult{kerr.InvalidConfig.Code, err.Error()}
	}
	switch {
	case l.d.Groups == nil:
		return invalidRequest("runtime group configs are not available: this coordinator has no per-group configuration wired")
	case r.group == "":
		return invalidRequest("Default group resources are not allowed.")
	}
	names := map[string]bool{}
	var nulls []string
	for _, o := range r.ops {
		if names[o.name] {
			return invalidRequest("Error due to duplicate config keys")
		}
		names[o.name] = true
		if o.value == nil && o.op != kmsg.IncrementalAlterConfigOpDelete {
			nulls = append(nulls, o.name)
		}
	}
	if len(nulls) > 0 {
		return invalidRequest("Null value not supported for : " + strings.Join(nulls, ", "))
	}
	next := map[string]string{}
	if !r.replace {
		maps.Copy(next, l.dyn[r.group])
	}
	for _, o := range r.ops {
		switch o.op {
		case kmsg.IncrementalAlterConfigOpSet:
			next[o.name] = *o.value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(next, o.name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if info, ok := config.GroupKey(o.name); !ok || info.Type != "LIST" {
				return invalidConfig(fmt.Errorf("can't %s to key %s because its type is not LIST", opName(o.op), o.name))
			}
			next[o.name] = editList(l.listValue(r.group, next, o.name), o.op, *o.value)
		default:
			return invalidRequest(fmt.Sprintf("Unknown operation type %d for key %s", o.op, o.name))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(next)) {
		v, err := config.ParseDynamic(k, next[k])
		if err != nil {
			return invalidConfig(err)
		}
		next[k] = v
	}
	if err := l.checkEffective(r.group, next); err != nil {
		return invalidConfig(err)
	}
	return next, alterResult{}
}

// listValue is the current value of list key name for group: its runtime
// value if it has one, else the file layers' (Kafka starts from the key's
// default instead; see docs/CONFIG.md).
func (l *Loop) listValue(group string, next map[string]string, name string) []string {
	raw, ok := next[name]
	if !ok {
		for _, s := range l.d.Groups.Explain(group) {
			if s.Key == name {
				raw = config.FormatValue(s.Value)
			}
		}
	}
	return splitList(raw)
}

// editList applies APPEND (add the values not present yet) or SUBTRACT
// (remove every occurrence) of the comma-separated values to list.
func editList(list []string, op kmsg.IncrementalAlterConfigOp, values string) string {
	for _, v := range splitList(values) {
		if op == kmsg.IncrementalAlterConfigOpAppend {
			if !slices.Contains(list, v) {
				list = append(list, v)
			}
			continue
		}
		list = slices.DeleteFunc(list, func(x string) bool { return x == v })
	}
	return strings.Join(list, ",")
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func opName(op kmsg.IncrementalAlterConfigOp) string {
	if op == kmsg.IncrementalAlterConfigOpAppend {
		return "APPEND"
	}
	return "SUBTRACT"
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
	if s.configured[group] || (l.d.Groups == nil && l.d.GroupConfig == nil) {
		return
	}
	l.dynMu.RLock()
	defer l.dynMu.RUnlock()
	s.configure(group)
}

// configure is Loop.configure with dynMu already held.
func (s *shard) configure(group string) {
	l := s.l
	if s.configured[group] || (l.d.Groups == nil && l.d.GroupConfig == nil) {
		return
	}
	if len(s.configured) >= maxConfiguredGroups {
		// Applying a group's settings again is harmless; forgetting keeps
		// memory bounded when clients churn through group ids.
		clear(s.configured)
	}
	s.configured[group] = true
	if l.d.Groups != nil {
		l.applyGroupConfig(s.c, group)
		return
	}
	if o := l.d.GroupConfig(group); o != nil {
		l.step(s.c, l.nowMs(), core.StreamsGroupConfig{Group: group, Overrides: *o})
	}
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

// alterResponse builds the answer to an alter request from its results.
func alterResponse(body kmsg.Request, results []alterResult) kmsg.Response {
	msg := func(r alterResult) *string {
		if r.code == 0 {
			return nil
		}
		return kmsg.StringPtr(r.msg)
	}
	switch b := body.(type) {
	case *kmsg.IncrementalAlterConfigsRequest:
		resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
		resp.SetVersion(b.Version)
		for i, r := range b.Resources {
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
			rr.ErrorCode, rr.ErrorMessage = results[i].code, msg(results[i])
			resp.Resources = append(resp.Resources, rr)
		}
		return resp
	case *kmsg.AlterConfigsRequest:
		resp := kmsg.NewPtrAlterConfigsResponse()
		resp.SetVersion(b.Version)
		for i, r := range b.Resources {
			rr := kmsg.NewAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
			rr.ErrorCode, rr.ErrorMessage = results[i].code, msg(results[i])
			resp.Resources = append(resp.Resources, rr)
		}
		return resp
	}
	return nil
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
	rr := kmsg.NewDescribeConfigsResponseResource()
	rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
	if r.ResourceName == "" {
		rr.ErrorCode, rr.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr("Group name must not be empty")
		return rr
	}
	static := map[string]config.Setting{}
	if l.d.Groups != nil {
		for _, s := range l.d.Groups.Explain(r.ResourceName) {
			static[s.Key] = s
		}
	}
	for _, s := range l.groupSettings(r.ResourceName) {
		if len(r.ConfigNames) > 0 && !slices.Contains(r.ConfigNames, s.Key) {
			continue
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value = s.Key, kmsg.StringPtr(config.FormatValue(s.Value))
		c.Source = configSource(s.Source)
		c.IsDefault = c.Source == kmsg.ConfigSourceDefaultConfig
		if info, ok := config.GroupKey(s.Key); ok {
			c.ConfigType = configType(info.Type)
			if body.IncludeDocumentation {
				c.Documentation = kmsg.StringPtr(info.Doc)
			}
		}
		if body.IncludeSynonyms {
			c.ConfigSynonyms = append(c.ConfigSynonyms, synonym(s))
			if st, ok := static[s.Key]; ok && s.Source == config.DynamicSource {
				c.ConfigSynonyms = append(c.ConfigSynonyms, synonym(st))
			}
		}
		rr.Configs = append(rr.Configs, c)
	}
	return rr
}

func synonym(s config.Setting) kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	y := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
	y.Name, y.Value, y.Source = s.Key, kmsg.StringPtr(config.FormatValue(s.Value)), configSource(s.Source)
	return y
}

// listGroupConfigResources answers ListConfigResources for GROUP: the
// groups that have runtime configs, in name order. A node of a cluster
// lists the groups of the partitions it answers for and asks each other
// node for the groups of the partitions that node owns (clusterConfigs).
func (l *Loop) listGroupConfigResources(ctx context.Context, req *wire.Request) (kmsg.Response, error) {
	if l.d.Ownership == nil {
		return l.readResponse(ctx, req, func(*core.Coordinator) kmsg.Response { return configResources(slices.Collect(maps.Keys(l.dyn))) })
	}
	if cluster.Forwarded(req.ClientIDString()) {
		groups, _, err := l.localConfigs(ctx)
		if err != nil {
			return submitError(req, err), nil
		}
		resp := configResources(groups)
		resp.SetVersion(req.Version)
		return resp, nil
	}
	return untilOwned(ctx, req, func() (kmsg.Response, error) {
		groups, complete, err := l.clusterConfigs(ctx)
		if err != nil || !complete {
			return nil, err
		}
		resp := configResources(groups)
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

// configResources lists groups as GROUP config resources, in name order,
// each once.
func configResources(groups []string) *kmsg.ListConfigResourcesResponse {
	resp := kmsg.NewPtrListConfigResourcesResponse()
	slices.Sort(groups)
	for _, g := range slices.Compact(groups) {
		r := kmsg.NewListConfigResourcesResponseConfigResource()
		r.Name, r.Type = g, int8(kmsg.ConfigResourceTypeGroupConfig)
		resp.ConfigResources = append(resp.ConfigResources, r)
	}
	return resp
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
			if err == nil && ownerMoving(resp) { // loading here, or given up meanwhile
				return nil, ctx.Err()
			}
			return resp, err
		}
		peer, ok := own.Route(p)
		if !ok {
			return nil, nil
		}
		resp, err := own.Forward(ctx, peer, req.Body)
		if err != nil || ownerMoving(resp) {
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

// ownerMoving reports whether a forwarded answer says the node asked no
// longer, or not yet, answers for the partition.
func ownerMoving(resp kmsg.Response) bool {
	moving := func(code int16) bool {
		return code == kerr.NotCoordinator.Code || code == kerr.CoordinatorLoadInProgress.Code || code == kerr.CoordinatorNotAvailable.Code
	}
	switch r := resp.(type) {
	case *kmsg.DescribeConfigsResponse:
		return slices.ContainsFunc(r.Resources, func(x kmsg.DescribeConfigsResponseResource) bool { return moving(x.ErrorCode) })
	case *kmsg.IncrementalAlterConfigsResponse:
		return slices.ContainsFunc(r.Resources, func(x kmsg.IncrementalAlterConfigsResponseResource) bool { return moving(x.ErrorCode) })
	case *kmsg.AlterConfigsResponse:
		return slices.ContainsFunc(r.Resources, func(x kmsg.AlterConfigsResponseResource) bool { return moving(x.ErrorCode) })
	}
	return false
}

// configSource maps a setting's source to Kafka's: runtime values are
// GROUP_CONFIG (Java's DYNAMIC_GROUP_CONFIG), built-in defaults
// DEFAULT_CONFIG, and the config file's values STATIC_BROKER_CONFIG.
func configSource(src string) kmsg.ConfigSource {
	switch src {
	case config.DynamicSource:
		return kmsg.ConfigSourceGroupConfig
	case "default":
		return kmsg.ConfigSourceDefaultConfig
	}
	return kmsg.ConfigSourceStaticBrokerConfig
}

func configType(t string) kmsg.ConfigType {
	switch t {
	case "INT":
		return kmsg.ConfigTypeInt
	case "LONG":
		return kmsg.ConfigTypeLong
	case "LIST":
		return kmsg.ConfigTypeList
	case "BOOLEAN":
		return kmsg.ConfigTypeBoolean
	}
	return kmsg.ConfigTypeString
}
