package authz

import (
	"context"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/wire"
)

// How each decision is asked (verified against a real Kafka 4.4 broker by
// interop/authz_test.go). Every probe writes nothing:
//
//   - GROUP: DescribeGroups v5 with IncludeAuthorizedOperations. Kafka
//     checks DESCRIBE on the group first (GROUP_AUTHORIZATION_FAILED), and
//     the group's coordinator fills the bitfield of every GROUP operation.
//     A broker that is not the group's upstream coordinator answers only
//     DESCRIBE; the other operations are then asked one by one with a
//     request Kafka authorizes before anything else: Heartbeat (READ),
//     OffsetDelete without partitions (DELETE), DescribeConfigs (DESCRIBE_
//     CONFIGS), IncrementalAlterConfigs with validateOnly (ALTER_CONFIGS).
//   - TOPIC: Metadata v12 with IncludeTopicAuthorizedOperations and no
//     auto-creation: TOPIC_AUTHORIZATION_FAILED when DESCRIBE is denied,
//     else the bitfield. A topic that does not exist has no bitfield; it is
//     let through to the coordinator, which answers the unknown-topic error.
//   - TRANSACTIONAL_ID WRITE: AddOffsetsToTxn with producer id -1, which
//     Kafka authorizes before it looks the (never matching) producer up.
//   - CLUSTER: DescribeCluster with IncludeClusterAuthorizedOperations.

// ProbeMemberID is the member id of the Heartbeat that asks for READ on a
// group: no member ever has it, so the cluster only authorizes it.
const ProbeMemberID = "coordhost-authorization-probe"

// unknownOps is Kafka's "authorized operations not provided" value.
const unknownOps = math.MinInt32

var (
	groupOps   = []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs}
	topicOps   = []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs}
	clusterOps = []kmsg.ACLOperation{kmsg.ACLOperationCreate, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe, kmsg.ACLOperationClusterAction, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite}
)

// resource is an ACL resource; a topic known only by id is named "id:<hex>".
type resource struct {
	rt   kmsg.ACLResourceType
	name string
}

func topicByID(id [16]byte) string { return "id:" + hex.EncodeToString(id[:]) }

// verdicts are decisions learned from one answer.
type verdicts map[resource]map[kmsg.ACLOperation]bool

func (v verdicts) set(r resource, op kmsg.ACLOperation, ok bool) {
	if v[r] == nil {
		v[r] = map[kmsg.ACLOperation]bool{}
	}
	v[r][op] = ok
}

// setBits records a Kafka authorized-operations bitfield (bit 1<<op).
func (v verdicts) setBits(r resource, ops []kmsg.ACLOperation, bits int32) {
	for _, op := range ops {
		v.set(r, op, bits&(1<<uint(op)) != 0)
	}
}

// who is whom a decision is for: one connection's session, in one
// authentication generation (a re-authentication starts a new one, so
// decisions made for the earlier authentication are never reused).
type who struct {
	s      wire.Session
	authed bool
	gen    uint64
}

func whoOf(req *wire.Request) who { return who{req.Session, req.Authenticated, req.AuthGeneration} }

type cacheKey struct {
	w  who
	r  resource
	op kmsg.ACLOperation
}

type entry struct {
	ok bool
	at time.Time
}

// cache keeps decisions per (session, resource, operation) for ttl.
type cache struct {
	ttl   time.Duration
	now   func() time.Time
	mu    sync.Mutex
	m     map[cacheKey]entry
	swept time.Time
}

func newCache(ttl time.Duration, now func() time.Time) *cache {
	return &cache{ttl: ttl, now: now, m: map[cacheKey]entry{}}
}

func (c *cache) get(k cacheKey) (ok, hit bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, hit := c.m[k]
	if !hit || c.now().Sub(e.at) >= c.ttl {
		return false, false
	}
	return e.ok, true
}

// put stores what one answer taught; entries older than ttl (of sessions
// long closed, too) are swept at most once per ttl.
func (c *cache) put(w who, v verdicts) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if now.Sub(c.swept) >= c.ttl {
		for k, e := range c.m {
			if now.Sub(e.at) >= c.ttl {
				delete(c.m, k)
			}
		}
		c.swept = now
	}
	for r, ops := range v {
		for op, ok := range ops {
			c.m[cacheKey{w, r, op}] = entry{ok, now}
		}
	}
}

// decideAll answers op on every resource of rs (all of one type), asking
// the cluster once for those not cached.
func (c *cache) decideAll(ctx context.Context, w who, rs []resource, op kmsg.ACLOperation) (map[resource]bool, error) {
	out := make(map[resource]bool, len(rs))
	var missing []resource
	for _, r := range rs {
		if ok, hit := c.get(cacheKey{w, r, op}); hit {
			out[r] = ok
		} else if _, dup := out[r]; !dup {
			missing = append(missing, r)
			out[r] = false
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	v, err := ask(ctx, w.s, missing, op)
	if err != nil {
		return nil, err
	}
	c.put(w, v)
	for _, r := range missing {
		out[r] = v[r][op]
	}
	return out, nil
}

// ask learns op on every resource of rs (all of one type) from the cluster.
func ask(ctx context.Context, s wire.Session, rs []resource, op kmsg.ACLOperation) (verdicts, error) {
	v := verdicts{}
	var err error
	switch rs[0].rt {
	case kmsg.ACLResourceTypeGroup:
		err = askGroups(ctx, s, rs, v)
		for _, r := range rs {
			if _, known := v[r][op]; !known && err == nil {
				var ok bool
				ok, err = askGroupOp(ctx, s, r.name, op)
				v.set(r, op, ok)
			}
		}
	case kmsg.ACLResourceTypeTopic:
		err = askTopics(ctx, s, rs, v)
	case kmsg.ACLResourceTypeTransactionalId:
		for _, r := range rs {
			var ok bool
			if ok, err = askTxnWrite(ctx, s, r.name); err != nil {
				break
			}
			v.set(r, kmsg.ACLOperationWrite, ok)
		}
	case kmsg.ACLResourceTypeCluster:
		if err = askCluster(ctx, s, rs[0], v); err == nil && op == kmsg.ACLOperationDescribeConfigs && !v[rs[0]][op] {
			var ok bool
			ok, err = askClusterDescribeConfigs(ctx, s)
			v.set(rs[0], op, ok)
		}
	default:
		err = fmt.Errorf("no way to ask about resource type %v", rs[0].rt)
	}
	return v, err
}

// askGroups learns DESCRIBE of every group, and every GROUP operation of
// the groups whose upstream coordinator answered the bitfield.
func askGroups(ctx context.Context, s wire.Session, rs []resource, v verdicts) error {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.SetVersion(5)
	req.IncludeAuthorizedOperations = true
	for _, r := range rs {
		req.Groups = append(req.Groups, r.name)
	}
	resp, err := s.Ask(ctx, req)
	if err != nil {
		return err
	}
	dr, ok := resp.(*kmsg.DescribeGroupsResponse)
	if !ok {
		return fmt.Errorf("DescribeGroups answered with %T", resp)
	}
	for _, g := range dr.Groups {
		r := resource{kmsg.ACLResourceTypeGroup, g.Group}
		switch {
		case g.ErrorCode == kerr.GroupAuthorizationFailed.Code:
			v.set(r, kmsg.ACLOperationDescribe, false)
		case g.ErrorCode == 0 && g.AuthorizedOperations != unknownOps:
			v.setBits(r, groupOps, g.AuthorizedOperations)
		default: // authorized, but this broker cannot describe the group
			v.set(r, kmsg.ACLOperationDescribe, true)
		}
	}
	return nil
}

// askGroupOp asks one GROUP operation with a request Kafka authorizes for
// it before doing anything else.
func askGroupOp(ctx context.Context, s wire.Session, group string, op kmsg.ACLOperation) (bool, error) {
	var req kmsg.Request
	switch op {
	case kmsg.ACLOperationRead:
		r := kmsg.NewPtrHeartbeatRequest()
		r.SetVersion(4)
		r.Group, r.Generation, r.MemberID = group, -1, ProbeMemberID
		req = r
	case kmsg.ACLOperationDelete:
		r := kmsg.NewPtrOffsetDeleteRequest()
		r.Group = group
		req = r
	case kmsg.ACLOperationDescribeConfigs:
		r := kmsg.NewPtrDescribeConfigsRequest()
		r.SetVersion(4)
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, group, []string{}
		r.Resources = append(r.Resources, rr)
		req = r
	case kmsg.ACLOperationAlterConfigs:
		r := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r.SetVersion(1)
		r.ValidateOnly = true
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
		r.Resources = append(r.Resources, rr)
		req = r
	default:
		return false, fmt.Errorf("no way to ask %v on a group", op)
	}
	resp, err := s.Ask(ctx, req)
	if err != nil {
		return false, err
	}
	var code int16
	switch r := resp.(type) {
	case *kmsg.HeartbeatResponse:
		code = r.ErrorCode
	case *kmsg.OffsetDeleteResponse:
		code = r.ErrorCode
	case *kmsg.DescribeConfigsResponse:
		for _, rr := range r.Resources {
			code = rr.ErrorCode
		}
	case *kmsg.IncrementalAlterConfigsResponse:
		for _, rr := range r.Resources {
			code = rr.ErrorCode
		}
	default:
		return false, fmt.Errorf("%s answered with %T", kmsg.NameForKey(req.Key()), resp)
	}
	return code != kerr.GroupAuthorizationFailed.Code, nil
}

// askTopics learns every TOPIC operation of the topics from Metadata.
func askTopics(ctx context.Context, s wire.Session, rs []resource, v verdicts) error {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	req.AllowAutoTopicCreation, req.IncludeTopicAuthorizedOperations = false, true
	byID := map[string]bool{}
	for _, r := range rs {
		t := kmsg.NewMetadataRequestTopic()
		if id, ok := parseTopicID(r.name); ok {
			t.TopicID = id
			byID[r.name] = true
		} else {
			t.Topic = kmsg.StringPtr(r.name)
		}
		req.Topics = append(req.Topics, t)
	}
	resp, err := s.Ask(ctx, req)
	if err != nil {
		return err
	}
	mr, ok := resp.(*kmsg.MetadataResponse)
	if !ok {
		return fmt.Errorf("the cluster answered Metadata with %T", resp)
	}
	for _, t := range mr.Topics {
		rs := []resource{{kmsg.ACLResourceTypeTopic, topicByID(t.TopicID)}}
		if t.Topic != nil {
			rs = append(rs, resource{kmsg.ACLResourceTypeTopic, *t.Topic})
		}
		for _, r := range rs {
			switch {
			case r.name == topicByID(t.TopicID) && !byID[r.name]:
				// only id-named requests learn under the id
			case t.ErrorCode == kerr.TopicAuthorizationFailed.Code:
				v.setBits(r, topicOps, 0)
			case t.ErrorCode == 0 && t.AuthorizedOperations != unknownOps:
				v.setBits(r, topicOps, t.AuthorizedOperations)
			default: // DESCRIBE allowed, no such topic: the coordinator answers it
				v.setBits(r, topicOps, -1)
			}
		}
	}
	return nil
}

func parseTopicID(name string) ([16]byte, bool) {
	var id [16]byte
	h, ok := strings.CutPrefix(name, "id:")
	if !ok || len(h) != 32 {
		return id, false
	}
	_, err := hex.Decode(id[:], []byte(h))
	return id, err == nil
}

// askTxnWrite learns WRITE on a transactional id.
func askTxnWrite(ctx context.Context, s wire.Session, id string) (bool, error) {
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.SetVersion(3)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = id, -1, -1, "coordhost-authorization-probe"
	resp, err := s.Ask(ctx, req)
	if err != nil {
		return false, err
	}
	r, ok := resp.(*kmsg.AddOffsetsToTxnResponse)
	if !ok {
		return false, fmt.Errorf("AddOffsetsToTxn answered with %T", resp)
	}
	return r.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code, nil
}

// askCluster learns DESCRIBE on the cluster, and every CLUSTER operation
// when DESCRIBE is allowed (Kafka answers the bitfield only then).
func askCluster(ctx context.Context, s wire.Session, r resource, v verdicts) error {
	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeClusterAuthorizedOperations = true
	resp, err := s.Ask(ctx, req)
	if err != nil {
		return err
	}
	dr, ok := resp.(*kmsg.DescribeClusterResponse)
	if !ok {
		return fmt.Errorf("DescribeCluster answered with %T", resp)
	}
	if dr.ErrorCode != 0 {
		return fmt.Errorf("DescribeCluster: %w", kerr.ErrorForCode(dr.ErrorCode))
	}
	bits := dr.ClusterAuthorizedOperations
	if bits == unknownOps { // not told: taken as denied (ListGroups then filters group by group)
		bits = 0
	}
	v.setBits(r, clusterOps, bits)
	return nil
}

// askClusterDescribeConfigs learns DESCRIBE_CONFIGS on the cluster, which
// Kafka checks first for a BROKER config resource (here: the cluster-wide
// default, asking for no config).
func askClusterDescribeConfigs(ctx context.Context, s wire.Session) (bool, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.SetVersion(4)
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeBroker, "", []string{}
	req.Resources = append(req.Resources, rr)
	resp, err := s.Ask(ctx, req)
	if err != nil {
		return false, err
	}
	r, ok := resp.(*kmsg.DescribeConfigsResponse)
	if !ok || len(r.Resources) != 1 {
		return false, fmt.Errorf("DescribeConfigs answered with %T", resp)
	}
	return r.Resources[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code, nil
}
