package wire

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// alterConfigs: GROUP resources go to the group coordinator, the rest to
// the data plane (see routeConfigResources).
func alterConfigs(ctx context.Context, c *conn, req *Request) (kmsg.Response, error) {
	type (
		q  = *kmsg.AlterConfigsRequest
		qr = kmsg.AlterConfigsRequestResource
		p  = *kmsg.AlterConfigsResponse
	)
	return routeConfigResources(ctx, c, req, req.Body.(q),
		func(b q) []qr { return b.Resources },
		func(r qr) kmsg.ConfigResourceType { return r.ResourceType },
		func(b q, rs []qr) q { sub := *b; sub.Resources = rs; return &sub },
		func(r p) *[]kmsg.AlterConfigsResponseResource { return &r.Resources })
}
