package wire

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeConfigs: GROUP resources are answered by the group coordinator
// (per-group configs live there), every other resource by the data plane.
func describeConfigs(ctx context.Context, c *conn, req *Request) (kmsg.Response, error) {
	type (
		q  = *kmsg.DescribeConfigsRequest
		qr = kmsg.DescribeConfigsRequestResource
		p  = *kmsg.DescribeConfigsResponse
	)
	return routeConfigResources(ctx, c, req, req.Body.(q),
		func(b q) []qr { return b.Resources },
		func(r qr) kmsg.ConfigResourceType { return r.ResourceType },
		func(b q, rs []qr) q { sub := *b; sub.Resources = rs; return &sub },
		func(r p) *[]kmsg.DescribeConfigsResponseResource { return &r.Resources })
}
