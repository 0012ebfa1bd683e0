package wire

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// splitter answers a RouteSplit key: it sends the group part of req to the
// coordinator and the rest to the data plane and merges the answers.
type splitter func(ctx context.Context, c *conn, req *Request) (kmsg.Response, error)

// splitters holds one splitter per RouteSplit key, each in its key's file.
var splitters = map[int16]splitter{
	int16(kmsg.FindCoordinator):         findCoordinator,
	int16(kmsg.DescribeConfigs):         describeConfigs,
	int16(kmsg.AlterConfigs):            alterConfigs,
	int16(kmsg.IncrementalAlterConfigs): incrementalAlterConfigs,
	int16(kmsg.ListConfigResources):     listConfigResources,
}

// isGroupResource reports whether a config resource is a GROUP resource,
// whose configs are the group coordinator's.
func isGroupResource(t kmsg.ConfigResourceType) bool {
	return t == kmsg.ConfigResourceTypeGroupConfig
}

// splitResources partitions items by isGroup, keeping each side's order.
// order[i] is true when item i went to the group side.
func splitResources[T any](items []T, isGroup func(T) bool) (group, other []T, order []bool) {
	for _, it := range items {
		g := isGroup(it)
		order = append(order, g)
		if g {
			group = append(group, it)
		} else {
			other = append(other, it)
		}
	}
	return group, other, order
}

// mergeResources interleaves the two sides' results back into request order.
func mergeResources[T any](group, other []T, order []bool) []T {
	out := make([]T, 0, len(order))
	for _, g := range order {
		switch {
		case g && len(group) > 0:
			out, group = append(out, group[0]), group[1:]
		case !g && len(other) > 0:
			out, other = append(out, other[0]), other[1:]
		}
	}
	return out
}

// throttled is a config response whose throttle can be read and merged.
type throttled interface {
	kmsg.Response
	Throttle() (int32, bool)
	SetThrottle(int32)
}

// routeConfigResources answers a config API request (DescribeConfigs,
// AlterConfigs, IncrementalAlterConfigs) whose resources are split by kind:
// GROUP resources go to the group coordinator (per-group configs live
// there), every other resource to the data plane; the two answers are merged
// back into request order. with returns a copy of the request holding only
// the given resources; reqOf and respOf give a request's and a response's
// resource list.
func routeConfigResources[Q kmsg.Request, QR any, P throttled, PR any](
	ctx context.Context, c *conn, req *Request, body Q,
	reqOf func(Q) []QR, kind func(QR) kmsg.ConfigResourceType, with func(Q, []QR) Q, respOf func(P) *[]PR,
) (kmsg.Response, error) {
	g, o, order := splitResources(reqOf(body), func(r QR) bool { return isGroupResource(kind(r)) })
	var gr, or []PR
	var merged P
	have := false
	if len(g) > 0 || len(o) == 0 {
		resp, err := c.group(ctx, req, with(body, g))
		if err != nil {
			return nil, err
		}
		merged, have = resp.(P), true
		gr = *respOf(merged)
	}
	if len(o) > 0 {
		resp, err := c.forward(ctx, req, with(body, o))
		if err != nil {
			return nil, err
		}
		fr := resp.(P)
		or = *respOf(fr)
		if !have {
			merged = fr
		} else {
			mt, _ := merged.Throttle()
			ft, _ := fr.Throttle()
			merged.SetThrottle(max(mt, ft))
		}
	}
	*respOf(merged) = mergeResources(gr, or, order)
	return merged, nil
}
