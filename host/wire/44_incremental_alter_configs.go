package wire

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// incrementalAlterConfigs: GROUP resources go to the group coordinator, the
// rest to the data plane (see 32_describe_configs.go).
func incrementalAlterConfigs(ctx context.Context, c *conn, req *Request) (kmsg.Response, error) {
	body := req.Body.(*kmsg.IncrementalAlterConfigsRequest)
	isGroup := func(r kmsg.IncrementalAlterConfigsRequestResource) bool { return isGroupResource(r.ResourceType) }
	g, o, order := splitResources(body.Resources, isGroup)
	var gr, or []kmsg.IncrementalAlterConfigsResponseResource
	var merged *kmsg.IncrementalAlterConfigsResponse
	if len(g) > 0 || len(o) == 0 {
		sub := *body
		sub.Resources = g
		resp, err := c.group(ctx, req, &sub)
		if err != nil {
			return nil, err
		}
		merged = resp.(*kmsg.IncrementalAlterConfigsResponse)
		gr = merged.Resources
	}
	if len(o) > 0 {
		sub := *body
		sub.Resources = o
		resp, err := c.forward(ctx, req, &sub)
		if err != nil {
			return nil, err
		}
		fr := resp.(*kmsg.IncrementalAlterConfigsResponse)
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
