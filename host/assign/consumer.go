package assign

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/core"
	rangeassignor "github.com/coordhost/coordhost/plugins/assignor-range"
	"github.com/coordhost/coordhost/plugins/assignor-uniform"
)

// ConsumerAssignors are the server-side assignors of KIP-848 consumer
// groups, in Kafka 4.4's order (uniform is the default): the native
// builds of the partition-assignor plugins, run inline by core.
func ConsumerAssignors() []core.NamedPartitionAssignor {
	return []core.NamedPartitionAssignor{
		{Name: "uniform", Assignor: partitionAssignor(uniform.Assign)},
		{Name: "range", Assignor: partitionAssignor(rangeassignor.Assign)},
	}
}

// partitionAssignor adapts a plugin algorithm on the ABI's dense indices
// to core's PartitionAssignor.
type partitionAssignor func(*abi.PartitionAssignRequest) (*abi.PartitionAssignResponse, error)

// AssignPartitions implements core.PartitionAssignor.
func (f partitionAssignor) AssignPartitions(in core.PartitionAssignInput) ([][]core.AssignedTopic, error) {
	resp, err := f(toPartitionABI(in))
	if err != nil {
		return nil, err
	}
	return fromPartitionABI(resp), nil
}

// fromPartitionABI translates an ABI response back to core's per-member
// assignments (core checks them against its input).
func fromPartitionABI(resp *abi.PartitionAssignResponse) [][]core.AssignedTopic {
	out := make([][]core.AssignedTopic, len(resp.Members))
	for i, tps := range resp.Members {
		for _, tp := range tps {
			out[i] = append(out[i], core.AssignedTopic{Topic: tp.Topic, Partitions: tp.Partitions})
		}
	}
	return out
}

// toPartitionABI translates core's input (topics ascending by id, members
// by id) to a PartitionAssignRequest with its rack table, and with the
// order in which Kafka's coordinator would hand the members over from the
// group's member map as its MemberOrder (Kafka's assignors break ties by
// it; uniform.MemberMap).
func toPartitionABI(in core.PartitionAssignInput) *abi.PartitionAssignRequest {
	req := &abi.PartitionAssignRequest{GroupID: in.Group, GroupEpoch: in.Epoch, Seed: seedOf(in.Group, in.Epoch)}
	for _, t := range in.Topics {
		for _, rs := range t.Racks {
			req.Racks = append(req.Racks, rs...)
		}
	}
	for _, m := range in.Members {
		if m.RackID != "" {
			req.Racks = append(req.Racks, m.RackID)
		}
	}
	slices.Sort(req.Racks)
	req.Racks = slices.Compact(req.Racks)
	rackIdx := func(r string) int32 { i, _ := slices.BinarySearch(req.Racks, r); return int32(i) }
	for _, t := range in.Topics {
		at := abi.Topic{ID: abi.TopicID(t.ID), Name: t.Name, Partitions: t.Partitions}
		if len(t.Racks) == int(t.Partitions) && t.Partitions > 0 {
			for _, rs := range t.Racks {
				idx := []int32{}
				for _, r := range rs {
					idx = append(idx, rackIdx(r))
				}
				slices.Sort(idx)
				at.PartitionRacks = append(at.PartitionRacks, slices.Compact(idx))
			}
		}
		req.Topics = append(req.Topics, at)
	}
	for i, m := range in.Members {
		cm := abi.ConsumerMember{ID: m.MemberID, InstanceID: m.InstanceID, Rack: m.RackID, Subscribed: m.Subscribed}
		for _, a := range m.Assigned {
			cm.Assigned = append(cm.Assigned, abi.TopicPartitions{Topic: a.Topic, Partitions: a.Partitions})
		}
		if i > 0 && !slices.Equal(m.Subscribed, in.Members[0].Subscribed) {
			req.Heterogeneous = true
		}
		req.Members = append(req.Members, cm)
	}
	if len(in.TableSeq) == len(in.Members) && len(in.Members) > 0 {
		req.MemberOrder = (&uniform.MemberMap{Peak: in.TablePeak, Seq: in.TableSeq}).Order(req.Members)
	}
	return req
}

// Consumers is core's PartitionAssignorSet: the plugins loaded at
// run time through /v1/plugins/{name} whose module exports
// coordhost_assign_partitions. A member names one as its ServerAssignor;
// until then the name is UNSUPPORTED_ASSIGNOR, as in Kafka. A failing
// plugin does not fail the heartbeat: the default assignor's native build
// (uniform) answers, counted in the plugin's plugin_failures, logged,
// noted in the group's history and shown as its assignor_fallback.
type Consumers struct {
	a        *Registry
	fallback core.NamedPartitionAssignor
	noter    atomic.Pointer[FallbackNoter] // set once wired: where fallbacks are noted
}

// FallbackNoter records how a successful run was answered: fb is nil when
// the assignor answered itself, else the fallback that answered and why.
type FallbackNoter func(run core.AssignorRun, fb *FellBack)

// NewConsumers is the set of a's plugins that consumer groups may name;
// fallback answers when one of them fails.
func NewConsumers(a *Registry, fallback core.NamedPartitionAssignor) *Consumers {
	return &Consumers{a: a, fallback: fallback}
}

// SetNoter sets where the runs' fallbacks are noted; until then only the
// log sees them.
func (r *Consumers) SetNoter(n FallbackNoter) { r.noter.Store(&n) }

// PartitionAssignor implements core.PartitionAssignorSet.
func (r *Consumers) PartitionAssignor(name string) (core.PartitionAssignor, bool) {
	as := r.a.get(name)
	if as == nil || as.plugin == nil || !as.hasPartitions.Load() {
		return nil, false
	}
	return &pluginPartitionAssignor{r: r, as: as}, true
}

// PartitionAssignorNames implements core.PartitionAssignorSet.
func (r *Consumers) PartitionAssignorNames() []string {
	var out []string
	for _, n := range r.a.Names() {
		if _, ok := r.PartitionAssignor(n); ok {
			out = append(out, n)
		}
	}
	return out
}

// pluginPartitionAssignor runs one loaded plugin's partition assignor,
// inline in the heartbeat as core runs every server assignor, bounded by
// the plugin runtime's per-call deadline and sandbox (plugin.Config).
type pluginPartitionAssignor struct {
	r  *Consumers
	as *assignor
}

// AssignPartitions implements core.PartitionAssignor.
func (p *pluginPartitionAssignor) AssignPartitions(in core.PartitionAssignInput) ([][]core.AssignedTopic, error) {
	p.as.runs.Add(1)
	resp, err := p.as.plugin.AssignPartitions(context.Background(), toPartitionABI(in))
	if err == nil {
		p.r.note(in, p.as.name, nil)
		return fromPartitionABI(resp), nil
	}
	p.as.failures.Add(1)
	out, ferr := p.r.fallback.Assignor.AssignPartitions(in)
	if ferr != nil {
		p.as.errors.Add(1)
		return nil, fmt.Errorf("plugin %q: assign_partitions: %w; fallback %q: %w", p.as.name, err, p.r.fallback.Name, ferr)
	}
	p.r.note(in, p.as.name, &FellBack{Fallback: p.r.fallback.Name, Err: err})
	return out, nil
}

// note records how a run was answered where the streams side records it
// (the FallbackNoter); before the loop is wired only the log sees it.
func (r *Consumers) note(in core.PartitionAssignInput, name string, fb *FellBack) {
	if n := r.noter.Load(); n != nil {
		(*n)(core.AssignorRun{Group: in.Group, Epoch: in.Epoch, Assignor: name}, fb)
	} else if fb != nil {
		r.a.log.Warn("partition assignor plugin failed: the fallback answered", "group", in.Group, "assignor", name, "fallback", fb.Fallback, "err", fb.Err)
	}
}
