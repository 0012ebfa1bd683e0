package wire

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FindCoordinator key types (Kafka's CoordinatorType).
const (
	coordinatorGroup       = 0
	coordinatorTransaction = 1
	coordinatorShare       = 2
)

// findCoordinator: coordhost is the coordinator of every group, so group
// lookups go to the group coordinator; transaction coordinators are the data
// plane's (and their addresses are rewritten on the way back); share
// coordinators do not exist here, because share groups are not served.
func findCoordinator(ctx context.Context, c *conn, req *Request) (kmsg.Response, error) {
	body := req.Body.(*kmsg.FindCoordinatorRequest)
	switch body.CoordinatorType {
	case coordinatorGroup:
		return c.group(ctx, req, body)
	case coordinatorTransaction:
		return c.forward(ctx, req, body)
	default:
		return ErrorResponse(body, kerr.InvalidRequest.Code), nil
	}
}
