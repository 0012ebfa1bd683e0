package loop

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/wire"
)

// findCoordinator answers a FindCoordinator for groups. A single node
// coordinates every group on the listener the client asked. A node of a
// cluster names, for each group, the node that owns the group's
// partition, by its synthetic broker id and listener, or answers
// COORDINATOR_NOT_AVAILABLE while no node holds the partition (it is
// moving), as Kafka does while a coordinator is elected
// (docs/SCALE-OUT.md, "Routing").
func (l *Loop) findCoordinator(req *wire.Request, body *kmsg.FindCoordinatorRequest) kmsg.Response {
	own := l.d.Ownership
	if own == nil {
		return findCoordinator(req, body)
	}
	resp := kmsg.NewPtrFindCoordinatorResponse()
	resp.SetVersion(body.Version)
	route := func(group string) (id int32, host string, port int32, code int16) {
		p, ok := own.Route(l.rt.PartitionFor(group))
		if !ok {
			return -1, "", -1, kerr.CoordinatorNotAvailable.Code
		}
		return p.BrokerID, p.Host, p.Port, 0
	}
	if body.Version < 4 {
		resp.NodeID, resp.Host, resp.Port, resp.ErrorCode = route(body.CoordinatorKey)
		return resp
	}
	for _, k := range body.CoordinatorKeys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = k
		c.NodeID, c.Host, c.Port, c.ErrorCode = route(k)
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return resp
}
