package wire

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeConfigs: GROUP resources are answered by the group coordinator
// (per-group configs live there), every other resource by the data plane.
func describeConfigs(ctx context.Context, c *conn, req *Request) (kmsg.Response, error) {
	body := req.Body.(*kmsg.DescribeConfigsRequest)
	isGroup := func(r kmsg.DescribeConfigsRequestResource) bool { return isGroupResource(r.ResourceType) }
	g, o, order := splitResources(body.Resources, isGroup)
	var gr, or []kmsg.DescribeConfigsResponseResource
	var merged *kmsg.DescribeConfigsResponse
	if len(g) > 0 || len(o) == 0 {
		sub := *body
		sub.Resources = g
		resp, err := c.group(ctx, req, &sub)
		if err != nil {
			return nil, err
		}
		merged = resp.(*kmsg.DescribeConfigsResponse)
		gr = merged.Resources
	}
	if len(o) > 0 {
		sub := *body
		sub.Resources = o
		resp, err := c.forward(ctx, req, &sub)
		if err != nil {
			return nil, err
		}
		fr := resp.(*kmsg.DescribeConfigsResponse)
		or = fr.Resources
		if merged == nil {
			merged = fr
		} else {
			merged.ThrottleMillis = max(merged.ThrottleMillis, fr.ThrottleMillis)
		}
	}
	merged.Resources = mergeResources(gr, or, order)
	return merged, nil
}
