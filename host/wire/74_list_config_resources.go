package wire

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// listConfigResources: GROUP config resources (the groups with runtime
// configs) are the group coordinator's, every other type the data plane's.
// v0 lists client-metrics resources only; in v1 an empty type list means
// every type, so the two answers are merged.
func listConfigResources(ctx context.Context, c *conn, req *Request) (kmsg.Response, error) {
	body := req.Body.(*kmsg.ListConfigResourcesRequest)
	group := int8(kmsg.ConfigResourceTypeGroupConfig)
	all := len(body.ResourceTypes) == 0
	if body.Version < 1 || (!all && !slices.Contains(body.ResourceTypes, group)) {
		return c.forward(ctx, req, body)
	}
	gsub := *body
	gsub.ResourceTypes = []int8{group}
	g, err := c.group(ctx, req, &gsub)
	if err != nil {
		return nil, err
	}
	gr, ok := g.(*kmsg.ListConfigResourcesResponse)
	others := slices.DeleteFunc(slices.Clone(body.ResourceTypes), func(t int8) bool { return t == group })
	if !ok || gr.ErrorCode != 0 || (!all && len(others) == 0) {
		return g, nil
	}
	fsub := *body
	fsub.ResourceTypes = others
	f, err := c.forward(ctx, req, &fsub)
	if err != nil {
		return nil, err
	}
	fr, ok := f.(*kmsg.ListConfigResourcesResponse)
	if !ok || fr.ErrorCode != 0 {
		return f, nil
	}
	fr.ConfigResources = slices.DeleteFunc(fr.ConfigResources, func(r kmsg.ListConfigResourcesResponseConfigResource) bool { return r.Type == group })
	fr.ConfigResources = append(fr.ConfigResources, gr.ConfigResources...)
	fr.ThrottleMillis = max(fr.ThrottleMillis, gr.ThrottleMillis)
	return fr, nil
}
