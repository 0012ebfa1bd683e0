package authz

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/wire"
)

// The operation and resource of every API are Kafka 4.4's (KafkaApis):
// READ on the group to join, sync, heartbeat (classic, consumer and
// streams), leave, commit and push a streams topology description;
// DESCRIBE to describe, list, find and fetch; DESCRIBE on each topic a
// consumer or streams heartbeat names and on each topic a described
// consumer group's assignments show; DELETE to delete groups and offsets;
// READ on each committed topic, DESCRIBE on each fetched one; WRITE on the
// transactional id before anything else for TxnOffsetCommit;
// DESCRIBE_CONFIGS/ALTER_CONFIGS on the group for its configs; DESCRIBE on
// the cluster lists every group, DESCRIBE_CONFIGS on the cluster lists
// config resources.

const (
	opRead      = kmsg.ACLOperationRead
	opWrite     = kmsg.ACLOperationWrite
	opDelete    = kmsg.ACLOperationDelete
	opDescribe  = kmsg.ACLOperationDescribe
	opDescConf  = kmsg.ACLOperationDescribeConfigs
	opAlterConf = kmsg.ACLOperationAlterConfigs
)

var (
	codeGroup   = kerr.GroupAuthorizationFailed.Code
	codeTopic   = kerr.TopicAuthorizationFailed.Code
	codeTxn     = kerr.TransactionalIDAuthorizationFailed.Code
	codeCluster = kerr.ClusterAuthorizationFailed.Code
)

func (c *check) handle() (kmsg.Response, error) {
	switch b := c.req.Body.(type) {
	case *kmsg.JoinGroupRequest:
		return c.whole(b, kmsg.ACLResourceTypeGroup, b.Group, opRead, codeGroup)
	case *kmsg.SyncGroupRequest:
		if b.Version >= 5 && (b.ProtocolType == nil || b.Protocol == nil) {
			return denied(b, kerr.InconsistentGroupProtocol.Code), nil // Kafka checks this before authorizing
		}
		return c.whole(b, kmsg.ACLResourceTypeGroup, b.Group, opRead, codeGroup)
	case *kmsg.HeartbeatRequest:
		return c.whole(b, kmsg.ACLResourceTypeGroup, b.Group, opRead, codeGroup)
	case *kmsg.StreamsGroupHeartbeatRequest:
		return c.streamsGroupHeartbeat(b)
	case *kmsg.ConsumerGroupHeartbeatRequest:
		return c.consumerGroupHeartbeat(b)
	case *kmsg.LeaveGroupRequest:
		return c.whole(b, kmsg.ACLResourceTypeGroup, b.Group, opRead, codeGroup)
	case *kmsg.OffsetCommitRequest:
		return c.offsetCommit(b)
	case *kmsg.TxnOffsetCommitRequest:
		return c.txnOffsetCommit(b)
	case *kmsg.OffsetFetchRequest:
		return c.offsetFetch(b)
	case *kmsg.OffsetDeleteRequest:
		return c.offsetDelete(b)
	case *kmsg.DescribeGroupsRequest:
		return c.describeGroups(b)
	case *kmsg.StreamsGroupDescribeRequest:
		return c.streamsGroupDescribe(b)
	case *kmsg.StreamsGroupTopologyDescriptionUpdateRequest:
		return c.whole(b, kmsg.ACLResourceTypeGroup, b.Group, opRead, codeGroup)
	case *kmsg.ConsumerGroupDescribeRequest:
		return c.consumerGroupDescribe(b)
	case *kmsg.ListGroupsRequest:
		return c.listGroups(b)
	case *kmsg.DeleteGroupsRequest:
		return c.deleteGroups(b)
	case *kmsg.FindCoordinatorRequest:
		return c.findCoordinator(b)
	case *kmsg.DescribeConfigsRequest:
		return c.describeConfigs(b)
	case *kmsg.AlterConfigsRequest:
		return c.alterConfigs(b)
	case *kmsg.IncrementalAlterConfigsRequest:
		return c.incrementalAlterConfigs(b)
	case *kmsg.ListConfigResourcesRequest:
		return c.whole(b, kmsg.ACLResourceTypeCluster, "kafka-cluster", opDescConf, codeCluster)
	default: // fail closed: a group API without a rule is never answered
		return nil, fmt.Errorf("no authorization rule for %s", kmsg.NameForKey(c.req.Key))
	}
}

// whole answers body with code everywhere unless op on the resource is
// allowed, in which case the coordinator answers it.
func (c *check) whole(body kmsg.Request, rt kmsg.ACLResourceType, name string, op kmsg.ACLOperation, code int16) (kmsg.Response, error) {
	ok, err := c.allowed(rt, name, op)
	if err != nil || !ok {
		return denied(body, code), err
	}
	return c.inner(body)
}

func denied(body kmsg.Request, code int16) kmsg.Response {
	resp := wire.ErrorResponse(body, code)
	switch r := resp.(type) {
	case *kmsg.JoinGroupResponse:
		r.Generation = -1
	case *kmsg.LeaveGroupResponse: // Kafka answers the error alone
		r.Members = nil
	case *kmsg.OffsetDeleteResponse:
		r.Topics = nil
	}
	return resp
}

// allowedSet decides op on every named resource of type rt at once,
// logging each denial.
func (c *check) allowedSet(rt kmsg.ACLResourceType, names []string, op kmsg.ACLOperation) (map[string]bool, error) {
	return c.decideSet(rt, names, op, true)
}

func (c *check) decideSet(rt kmsg.ACLResourceType, names []string, op kmsg.ACLOperation, audit bool) (map[string]bool, error) {
	out := make(map[string]bool, len(names))
	if len(names) == 0 {
		return out, nil
	}
	rs := make([]resource, len(names))
	for i, n := range names {
		rs[i] = resource{rt, n}
	}
	m, err := c.decideAll(rs, op)
	if err != nil {
		return nil, err
	}
	for r, ok := range m {
		out[r.name] = ok
		if !ok && audit {
			c.logDenied(rt, r.name, op)
		}
	}
	return out, nil
}

// groupOpsBits is the authorized-operations bitfield of a group, as Kafka
// answers it in DescribeGroups and StreamsGroupDescribe.
func (c *check) groupOpsBits(group string) (int32, error) {
	var bits int32
	for _, op := range groupOps {
		ok, err := c.decide(resource{kmsg.ACLResourceTypeGroup, group}, op)
		if err != nil {
			return 0, err
		}
		if ok {
			bits |= 1 << uint(op)
		}
	}
	return bits, nil
}

// fillOps sets the authorized-operations bitfield of each of n described
// groups without error when include asks for it; at gives the i-th group's
// name, error code and field.
func (c *check) fillOps(include bool, n int, at func(i int) (string, int16, *int32)) error {
	for i := 0; include && i < n; i++ {
		if group, code, ops := at(i); code == 0 {
			bits, err := c.groupOpsBits(group)
			if err != nil {
				return err
			}
			*ops = bits
		}
	}
	return nil
}

// topicName is the ACL resource name of a topic named by name or by id.
func topicName(name string, id [16]byte, byID bool) string {
	if byID {
		return topicByID(id)
	}
	return name
}

// keep splits items into the allowed and the refused ones, keeping order;
// allowed is never nil.
func keep[T any](items []T, ok func(T) bool) (allowed, refused []T) {
	allowed = make([]T, 0, len(items))
	for _, it := range items {
		if ok(it) {
			allowed = append(allowed, it)
		} else {
			refused = append(refused, it)
		}
	}
	return allowed, refused
}

// byItem authorizes op on the resource each item names: the coordinator
// answers a copy of the request holding the allowed items (set builds it),
// code answers the refused ones, and merge adds those answers to the
// coordinator's response.
func byItem[I any, R kmsg.Response](c *check, items []I, set func([]I) kmsg.Request, rt kmsg.ACLResourceType,
	name func(I) string, op kmsg.ACLOperation, code int16, merge func(r, refused R) error) (kmsg.Response, error) {
	ok, err := c.allowedSet(rt, names(items, name), op)
	if err != nil {
		return nil, err
	}
	allowed, refused := keep(items, func(it I) bool { return ok[name(it)] })
	out := wire.ErrorResponse(set(refused), code).(R)
	d, isDelete := any(out).(*kmsg.OffsetDeleteResponse)
	if isDelete {
		d.ErrorCode = 0 // refused topics are refused per partition
	}
	// Kafka asks the coordinator for OffsetDelete even when every topic is
	// refused: a group error it answers (GROUP_ID_NOT_FOUND) is then the
	// whole answer.
	if len(allowed) == 0 && len(refused) > 0 && !isDelete {
		return out, nil
	}
	resp, err := c.inner(set(allowed))
	r, same := resp.(R)
	if err != nil || !same {
		return resp, err
	}
	return r, merge(r, out)
}
