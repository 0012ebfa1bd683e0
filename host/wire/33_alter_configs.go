package wire

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// alterConfigs: GROUP resources go to the group coordinator, the rest to
// the data plane (see 32_describe_configs.go).
func alterConfigs(ctx context.Context, c *conn, req *Request) (kmsg.Response, error) {
	body := req.Body.(*kmsg.AlterConfigsRequest)
	isGroup := func(r kmsg.AlterConfigsRequestResource) bool { return isGroupResource(r.ResourceType) }
	g, o, order := splitResources(body.Resources, isGroup)
	var gr, or []kmsg.AlterConfigsResponseResource
	var merged *kmsg.AlterConfigsResponse
	if len(g) > 0 || len(o) == 0 {
		sub := *body
		sub.Resources = g
		resp, err := c.group(ctx, req, &sub)
		if err != nil {
			return nil, err
		}
		merged = resp.(*kmsg.AlterConfigsResponse)
		gr = merged.Resources
	}
	if len(o) > 0 {
		sub := *body
		sub.Resources = o
		resp, err := c.forward(ctx, req, &sub)
		if err != nil {
			return nil, err
		}
		fr := resp.(*kmsg.AlterConfigsResponse)
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
