package wire

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Session asks the data plane something over one client connection's own
// upstream link (opened on first use), so the cluster answers for that
// client's principal. A Session is comparable: one value per connection.
type Session interface {
	Ask(ctx context.Context, body kmsg.Request) (kmsg.Response, error)
}

// Ask implements Session: body goes over this connection's data-plane link
// with the client id of the request being served.
func (c *conn) Ask(ctx context.Context, body kmsg.Request) (kmsg.Response, error) {
	return c.forward(ctx, &Request{ClientID: c.clientID}, body)
}
