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
