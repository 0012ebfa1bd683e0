package loop

import (
	"context"
	"sort"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host/wire"
)

// Requests that name several groups are split by partition: each
// partition answers for its groups, and the answers are merged back in
// the request's order. Requests about every group (ListGroups) ask every
// partition.

// requestGroup names the group whose partition a request (or a part of a
// split request) goes to, and whether it changes runtime group configs.
func requestGroup(req *wire.Request) (group string, configs bool) {
	if g := wire.GroupOf(req.Body); g != "" {
		return g, false
	}
	switch b := req.Body.(type) {
	case *kmsg.DeleteGroupsRequest:
		if len(b.Groups) > 0 {
			return b.Groups[0], false
		}
	case *kmsg.IncrementalAlterConfigsRequest:
		if len(b.Resources) > 0 {
			return b.Resources[0].ResourceName, true
		}
		return "", true
	case *kmsg.AlterConfigsRequest:
		if len(b.Resources) > 0 {
			return b.Resources[0].ResourceName, true
		}
		return "", true
	}
	return "", false
}

// split calls one for every partition that holds some of the n items
// (item i belongs to group(i)), with the indexes of its items in request
// order; the partitions run at once. It returns the first error.
func (l *Loop) split(n int, group func(i int) string, one func(idx []int) error) error {
	byPart := map[int][]int{}
	for i := 0; i < n; i++ {
		p := l.rt.PartitionFor(group(i))
		byPart[p] = append(byPart[p], i)
	}
	if len(byPart) <= 1 {
		for _, idx := range byPart {
			return one(idx)
		}
		return one(nil)
	}
	errs := make(chan error, len(byPart))
	var wg sync.WaitGroup
	for _, idx := range byPart {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- one(idx) }()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// pick returns the items of xs at idx.
func pick[T any](xs []T, idx []int) []T {
	out := make([]T, 0, len(idx))
	for _, i := range idx {
		out = append(out, xs[i])
	}
	return out
}

// place puts a part's answers (one per item of idx, in order) at their
// positions in out; a part that answered otherwise is appended.
func place[T any](out []T, idx []int, part []T, extra *[]T) {
	if len(part) != len(idx) {
		*extra = append(*extra, part...)
		return
	}
	for j, i := range idx {
		out[i] = part[j]
	}
}

// merged returns out (sized to the request) followed by extra, without
// the slots no part filled.
func merged[T any](out []T, filled []bool, extra []T) []T {
	res := make([]T, 0, len(out)+len(extra))
	for i, v := range out {
		if filled[i] {
			res = append(res, v)
		}
	}
	return append(res, extra...)
}

// groupAnswers gathers per-item answers of a split request.
type groupAnswers[T any] struct {
	mu     sync.Mutex
	out    []T
	filled []bool
	extra  []T
}

func newAnswers[T any](n int) *groupAnswers[T] {
	return &groupAnswers[T]{out: make([]T, n), filled: make([]bool, n)}
}

func (a *groupAnswers[T]) put(idx []int, part []T) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(part) == len(idx) {
		for _, i := range idx {
			a.filled[i] = true
		}
	}
	place(a.out, idx, part, &a.extra)
}

func (a *groupAnswers[T]) all() []T { return merged(a.out, a.filled, a.extra) }

// deleteCoreGroups deletes core's groups, each in its partition.
func (l *Loop) deleteCoreGroups(ctx context.Context, req *wire.Request, body *kmsg.DeleteGroupsRequest) (*kmsg.DeleteGroupsResponse, error) {
	ans := newAnswers[kmsg.DeleteGroupsResponseGroup](len(body.Groups))
	var other kmsg.Response
	err := l.split(len(body.Groups), func(i int) string { return body.Groups[i] }, func(idx []int) error {
		sub := *body
		sub.Groups = pick(body.Groups, idx)
		subReq := *req
		subReq.Body, subReq.Decode, subReq.Wire = &sub, 0, 0 // decoded for every group: charged to none
		r, err := l.do(ctx, &subReq, event{mutate: func(c *core.Coordinator, now int64, id core.RequestID) core.Output {
			return l.step(c, now, core.Request{ID: id, Body: &sub})
		}})
		if err != nil {
			return err
		}
		if dr, ok := r.(*kmsg.DeleteGroupsResponse); ok {
			ans.put(idx, dr.Groups)
		} else {
			other = r
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	resp := kmsg.NewPtrDeleteGroupsResponse()
	resp.SetVersion(req.Version)
	if dr, ok := other.(*kmsg.DeleteGroupsResponse); ok {
		resp.ThrottleMillis = dr.ThrottleMillis
	}
	resp.Groups = ans.all()
	return resp, nil
}

// describeCoreGroups describes core's classic groups, each in its partition.
func (l *Loop) describeCoreGroups(ctx context.Context, body *kmsg.DescribeGroupsRequest) (*kmsg.DescribeGroupsResponse, error) {
	ans := newAnswers[kmsg.DescribeGroupsResponseGroup](len(body.Groups))
	err := l.split(len(body.Groups), func(i int) string { return body.Groups[i] }, func(idx []int) error {
		sub := *body
		sub.Groups = pick(body.Groups, idx)
		return l.readOn(ctx, l.partitionOf(sub.Groups), func(c *core.Coordinator, _ int64) core.Output {
			ans.put(idx, readCore[*kmsg.DescribeGroupsResponse](l, c, &sub).Groups)
			return core.Output{}
		})
	})
	resp := kmsg.NewPtrDescribeGroupsResponse()
	resp.SetVersion(body.Version)
	resp.Groups = ans.all()
	return resp, err
}

// describeStreamsGroups answers StreamsGroupDescribe, each group in its
// partition.
func (l *Loop) describeStreamsGroups(ctx context.Context, req *wire.Request, body *kmsg.StreamsGroupDescribeRequest) (kmsg.Response, error) {
	groups, err := describeSplit(ctx, l, body.Groups, func(c *core.Coordinator, ids []string) []kmsg.StreamsGroupDescribeResponseGroup {
		sub := *body
		sub.Groups = ids
		return readCore[*kmsg.StreamsGroupDescribeResponse](l, c, &sub).Groups
	})
	if err != nil {
		return submitError(req, err), nil
	}
	resp := kmsg.NewPtrStreamsGroupDescribeResponse()
	resp.SetVersion(req.Version)
	resp.Groups = groups
	return resp, nil
}

// describeConsumerGroups answers ConsumerGroupDescribe, each group in its
// partition.
func (l *Loop) describeConsumerGroups(ctx context.Context, req *wire.Request, body *kmsg.ConsumerGroupDescribeRequest) (kmsg.Response, error) {
	groups, err := describeSplit(ctx, l, body.Groups, func(c *core.Coordinator, ids []string) []kmsg.ConsumerGroupDescribeResponseGroup {
		sub := *body
		sub.Groups = ids
		return readCore[*kmsg.ConsumerGroupDescribeResponse](l, c, &sub).Groups
	})
	if err != nil {
		return submitError(req, err), nil
	}
	resp := kmsg.NewPtrConsumerGroupDescribeResponse()
	resp.SetVersion(req.Version)
	resp.Groups = groups
	return resp, nil
}

// describeSplit reads each group's description in its partition, and
// returns them in request order.
func describeSplit[G any](ctx context.Context, l *Loop, groups []string, describe func(c *core.Coordinator, ids []string) []G) ([]G, error) {
	ans := newAnswers[G](len(groups))
	err := l.split(len(groups), func(i int) string { return groups[i] }, func(idx []int) error {
		ids := pick(groups, idx)
		return l.readOn(ctx, l.partitionOf(ids), func(c *core.Coordinator, _ int64) core.Output {
			ans.put(idx, describe(c, ids))
			return core.Output{}
		})
	})
	return ans.all(), err
}

// listCoreGroups lists the groups of every partition, in id order.
func (l *Loop) listCoreGroups(ctx context.Context, body *kmsg.ListGroupsRequest) (*kmsg.ListGroupsResponse, error) {
	resp := kmsg.NewPtrListGroupsResponse()
	resp.SetVersion(body.Version)
	err := l.read(ctx, func(c *core.Coordinator, _ int64) core.Output {
		r := readCore[*kmsg.ListGroupsResponse](l, c, body)
		resp.Groups = append(resp.Groups, r.Groups...)
		if resp.ErrorCode == 0 {
			resp.ErrorCode = r.ErrorCode
		}
		return core.Output{}
	})
	sort.SliceStable(resp.Groups, func(i, j int) bool { return resp.Groups[i].Group < resp.Groups[j].Group })
	return resp, err
}

// decideOffsetFetch asks each group's partition whether its offsets may be
// fetched; the decisions are in request order (one for v0-7).
func (l *Loop) decideOffsetFetch(ctx context.Context, body *kmsg.OffsetFetchRequest) ([]core.OffsetDecision, error) {
	if body.Version < 8 {
		d, err := l.decideOne(ctx, body.Group, body)
		return []core.OffsetDecision{d}, err
	}
	ans := newAnswers[core.OffsetDecision](len(body.Groups))
	err := l.split(len(body.Groups), func(i int) string { return body.Groups[i].Group }, func(idx []int) error {
		sub := *body
		sub.Groups = pick(body.Groups, idx)
		ds, err := l.decideOffsets(ctx, l.rt.PartitionFor(body.Groups[idx[0]].Group), &sub)
		if err == nil {
			ans.put(idx, ds)
		}
		return err
	})
	return ans.all(), err
}

// alterConfigsByPartition alters the runtime configs of GROUP resources,
// each in its group's partition.
func (l *Loop) alterConfigsByPartition(ctx context.Context, req *wire.Request) (kmsg.Response, error) {
	switch body := req.Body.(type) {
	case *kmsg.IncrementalAlterConfigsRequest:
		ans := newAnswers[kmsg.IncrementalAlterConfigsResponseResource](len(body.Resources))
		err := l.split(len(body.Resources), func(i int) string { return body.Resources[i].ResourceName }, func(idx []int) error {
			sub := *body
			sub.Resources = pick(body.Resources, idx)
			r, err := l.alterPart(ctx, req, &sub)
			if ir, ok := r.(*kmsg.IncrementalAlterConfigsResponse); ok {
				ans.put(idx, ir.Resources)
			}
			return err
		})
		resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
		resp.SetVersion(req.Version)
		resp.Resources = ans.all()
		return resp, err
	case *kmsg.AlterConfigsRequest:
		ans := newAnswers[kmsg.AlterConfigsResponseResource](len(body.Resources))
		err := l.split(len(body.Resources), func(i int) string { return body.Resources[i].ResourceName }, func(idx []int) error {
			sub := *body
			sub.Resources = pick(body.Resources, idx)
			r, err := l.alterPart(ctx, req, &sub)
			if ar, ok := r.(*kmsg.AlterConfigsResponse); ok {
				ans.put(idx, ar.Resources)
			}
			return err
		})
		resp := kmsg.NewPtrAlterConfigsResponse()
		resp.SetVersion(req.Version)
		resp.Resources = ans.all()
		return resp, err
	}
	return l.alterGroupConfigs(ctx, req)
}

// alterPart alters the resources of sub, all of one partition, on the
// node that owns it (onOwner).
func (l *Loop) alterPart(ctx context.Context, req *wire.Request, sub kmsg.Request) (kmsg.Response, error) {
	subReq := *req
	subReq.Body, subReq.Decode, subReq.Wire = sub, 0, 0 // decoded for every group: charged to none
	group, _ := requestGroup(&subReq)
	return l.onOwner(ctx, &subReq, l.rt.PartitionFor(group), func() (kmsg.Response, error) { return l.alterGroupConfigs(ctx, &subReq) })
}

// partitionOf is the partition of groups (all in one partition), 0 for none.
func (l *Loop) partitionOf(groups []string) int {
	if len(groups) == 0 {
		return 0
	}
	return l.rt.PartitionFor(groups[0])
}

// heldGroups tells, for each of ids, whether core holds that group (of any
// type), asking each group's partition.
func (l *Loop) heldGroups(ctx context.Context, ids []string) ([]bool, error) {
	ans := newAnswers[bool](len(ids))
	err := l.split(len(ids), func(i int) string { return ids[i] }, func(idx []int) error {
		return l.readOn(ctx, l.partitionOf(pick(ids, idx)), func(c *core.Coordinator, _ int64) core.Output {
			held := make([]bool, len(idx))
			for j, i := range idx {
				_, held[j] = c.Group(ids[i])
			}
			ans.put(idx, held)
			return core.Output{}
		})
	})
	return ans.out, err
}
