package host

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host/authz"
	"github.com/coordhost/coordhost/host/offsets"
	"github.com/coordhost/coordhost/host/wire"
)

// Handle answers one group-coordination request (GroupCoordinator).
func (l *Loop) Handle(ctx context.Context, req *wire.Request) (kmsg.Response, error) {
	l.stats.requests.Add(1)
	client := core.ClientInfo{ClientID: req.ClientIDString(), ClientHost: req.ClientHost}
	switch body := req.Body.(type) {
	case *kmsg.FindCoordinatorRequest:
		return l.findCoordinator(req, body), nil
	case *kmsg.StreamsGroupHeartbeatRequest:
		l.stats.heartbeats.Add(1)
		prep, err := prepareStreamsHeartbeat(ctx, body)
		if err != nil {
			return nil, err
		}
		return l.do(ctx, req, event{mutate: func(c *core.Coordinator, now int64, id core.RequestID) core.Output {
			l.configure(c, body.Group)
			return c.StreamsGroupHeartbeatPrepared(now, id, client, prep)
		}})
	case *kmsg.ConsumerGroupHeartbeatRequest:
		l.stats.heartbeats.Add(1)
		client.DescribableTopic = authz.DescribableTopics(ctx) // regex matches are filtered by it
		return l.do(ctx, req, event{mutate: func(c *core.Coordinator, now int64, id core.RequestID) core.Output {
			return c.ConsumerGroupHeartbeat(now, id, client, body)
		}})
	case *kmsg.JoinGroupRequest:
		return l.do(ctx, req, event{mutate: func(c *core.Coordinator, now int64, id core.RequestID) core.Output {
			l.configure(c, body.Group) // a classic join may convert a streams group
			return c.JoinGroup(now, id, client, body)
		}})
	case *kmsg.SyncGroupRequest:
		return l.do(ctx, req, event{mutate: func(c *core.Coordinator, now int64, id core.RequestID) core.Output {
			return c.SyncGroup(now, id, body)
		}})
	case *kmsg.HeartbeatRequest:
		l.stats.heartbeats.Add(1)
		return l.do(ctx, req, event{mutate: func(c *core.Coordinator, now int64, id core.RequestID) core.Output {
			return c.Heartbeat(now, id, body)
		}})
	case *kmsg.LeaveGroupRequest:
		return l.do(ctx, req, event{mutate: func(c *core.Coordinator, now int64, id core.RequestID) core.Output {
			return c.LeaveGroup(now, id, body)
		}})
	}
	return l.handleAdmin(ctx, req)
}

// handleAdmin answers the group requests that read or delete groups, the
// offset requests and the GROUP-resource config requests.
func (l *Loop) handleAdmin(ctx context.Context, req *wire.Request) (kmsg.Response, error) {
	switch body := req.Body.(type) {
	case *kmsg.DeleteGroupsRequest:
		return l.deleteGroups(ctx, req, body)
	case *kmsg.StreamsGroupDescribeRequest:
		return l.describeStreamsGroups(ctx, req, body)
	case *kmsg.StreamsGroupTopologyDescriptionUpdateRequest:
		return core.StreamsGroupTopologyDescriptionUpdate(body), nil // reads no group state
	case *kmsg.ConsumerGroupDescribeRequest:
		return l.describeConsumerGroups(ctx, req, body)
	case *kmsg.DescribeGroupsRequest:
		return l.describeGroups(ctx, req, body)
	case *kmsg.ListGroupsRequest:
		return l.listGroups(ctx, req, body)
	case *kmsg.OffsetCommitRequest, *kmsg.TxnOffsetCommitRequest, *kmsg.OffsetFetchRequest, *kmsg.OffsetDeleteRequest:
		if l.offsetStore() == nil { // offsets live in the data plane
			return wire.ErrorResponse(req.Body, kerr.CoordinatorNotAvailable.Code), nil
		}
		return l.handleOffsets(ctx, req)
	case *kmsg.DescribeConfigsRequest:
		return l.describeGroupConfigs(ctx, req, body)
	case *kmsg.IncrementalAlterConfigsRequest, *kmsg.AlterConfigsRequest:
		return l.alterConfigsByPartition(ctx, req)
	case *kmsg.ListConfigResourcesRequest:
		return l.listGroupConfigResources(ctx, req)
	}
	return nil, fmt.Errorf("group coordinator: %s is not a group request", kmsg.NameForKey(req.Key))
}

// handleOffsets answers the offset requests (core decides, the data plane stores).
func (l *Loop) handleOffsets(ctx context.Context, req *wire.Request) (kmsg.Response, error) {
	switch body := req.Body.(type) {
	case *kmsg.OffsetCommitRequest:
		return l.offsetCommit(ctx, req, body)
	case *kmsg.TxnOffsetCommitRequest:
		return l.txnOffsetCommit(ctx, req, body)
	case *kmsg.OffsetFetchRequest:
		return l.offsetFetch(ctx, req, body)
	case *kmsg.OffsetDeleteRequest:
		return l.offsetDelete(ctx, req, body)
	}
	return nil, fmt.Errorf("group coordinator: %s is not a group request", kmsg.NameForKey(req.Key))
}

// findCoordinator answers that this listener coordinates every group.
func findCoordinator(req *wire.Request, body *kmsg.FindCoordinatorRequest) kmsg.Response {
	resp := kmsg.NewPtrFindCoordinatorResponse()
	resp.SetVersion(body.Version)
	b := req.Listener
	if body.Version < 4 {
		resp.NodeID, resp.Host, resp.Port = b.NodeID, b.Host, b.Port
		return resp
	}
	for _, k := range body.CoordinatorKeys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.NodeID, c.Host, c.Port = k, b.NodeID, b.Host, b.Port
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return resp
}

// readResponse answers req with fn's response, read on committed state of
// one partition: for reads that need no group's state in core (group
// configs).
func (l *Loop) readResponse(ctx context.Context, req *wire.Request, fn func(c *core.Coordinator) kmsg.Response) (kmsg.Response, error) {
	var resp kmsg.Response
	if err := l.readOn(ctx, 0, func(c *core.Coordinator, _ int64) core.Output { resp = fn(c); return core.Output{} }); err != nil {
		return submitError(req, err), nil
	}
	resp.SetVersion(req.Version)
	return resp, nil
}

// offsetCommit decides and forwards an OffsetCommit as one step of the
// group's offset queue (offsets_gate.go).
func (l *Loop) offsetCommit(ctx context.Context, req *wire.Request, body *kmsg.OffsetCommitRequest) (kmsg.Response, error) {
	return l.gated(ctx, []string{body.Group}, func() (kmsg.Response, error) {
		var d core.OffsetDecision
		err := l.readGroup(ctx, body.Group, func(c *core.Coordinator, now int64) core.Output {
			var out core.Output
			d, out = c.DecideOffsetCommit(now, body)
			return out
		})
		if err != nil {
			return submitError(req, err), nil
		}
		if d.ErrorCode != 0 {
			return wire.ErrorResponse(body, d.ErrorCode), nil
		}
		resp, unsent, ferr := writeOffsets(l, req, body, body.Group, func(w offsets.Writer) (*kmsg.OffsetCommitResponse, error) {
			return w.CommitOffsets(l.ctx, body)
		})
		if unsent != nil {
			return unsent, nil
		}
		if ferr != nil {
			l.log.Warn("offset commit forwarding failed; reading the outcome back", "group", body.Group, "err", ferr)
			return l.settleCommit(body), nil
		}
		l.stats.commits.Add(1)
		return resp, nil
	})
}

// txnOffsetCommit decides and forwards a TxnOffsetCommit as one step of
// the group's offset queue. Its offsets are not readable before the
// transaction ends, so a forward of unknown outcome is answered
// COORDINATOR_NOT_AVAILABLE once a read of the group has been answered.
func (l *Loop) txnOffsetCommit(ctx context.Context, req *wire.Request, body *kmsg.TxnOffsetCommitRequest) (kmsg.Response, error) {
	return l.gated(ctx, []string{body.Group}, func() (kmsg.Response, error) {
		var d core.OffsetDecision
		if err := l.readGroup(ctx, body.Group, func(c *core.Coordinator, _ int64) core.Output {
			d = c.DecideTxnOffsetCommit(body)
			return core.Output{}
		}); err != nil {
			return submitError(req, err), nil
		}
		if d.ErrorCode != 0 {
			return wire.ErrorResponse(body, d.ErrorCode), nil
		}
		resp, unsent, ferr := writeOffsets(l, req, body, body.Group, func(w offsets.Writer) (*kmsg.TxnOffsetCommitResponse, error) {
			return w.TxnCommitOffsets(l.ctx, body)
		})
		if unsent != nil {
			return unsent, nil
		}
		if ferr != nil {
			l.log.Warn("transactional offset commit forwarding failed; reading the group back", "group", body.Group, "err", ferr)
			l.readBackGroup(body.Group)
			return wire.ErrorResponse(body, kerr.CoordinatorNotAvailable.Code), nil
		}
		return resp, nil
	})
}

// offsetFetch reads offsets as one step of each named group's offset
// queue, so it sees every commit allowed before it.
func (l *Loop) offsetFetch(ctx context.Context, req *wire.Request, body *kmsg.OffsetFetchRequest) (kmsg.Response, error) {
	groups := []string{body.Group}
	if body.Version >= 8 {
		groups = groups[:0]
		for _, g := range body.Groups {
			groups = append(groups, g.Group)
		}
	}
	return l.gated(ctx, groups, func() (kmsg.Response, error) { return l.offsetFetchStep(ctx, req, body) })
}

func (l *Loop) offsetFetchStep(ctx context.Context, req *wire.Request, body *kmsg.OffsetFetchRequest) (kmsg.Response, error) {
	ds, err := l.decideOffsetFetch(ctx, body)
	if err != nil {
		return submitError(req, err), nil
	}
	if body.Version < 8 {
		if ds[0].ErrorCode != 0 {
			return wire.ErrorResponse(body, ds[0].ErrorCode), nil
		}
		return l.forwardFetch(ctx, body)
	}
	// v8+: forward the allowed groups, answer the others with their error.
	allowed := *body
	allowed.Groups = nil
	denied := map[string]int16{}
	for i, g := range body.Groups {
		if ds[i].ErrorCode != 0 {
			denied[g.Group] = ds[i].ErrorCode
			continue
		}
		allowed.Groups = append(allowed.Groups, g)
	}
	resp := kmsg.NewPtrOffsetFetchResponse()
	resp.SetVersion(body.Version)
	fwd := map[string]kmsg.OffsetFetchResponseGroup{}
	if len(allowed.Groups) > 0 {
		r, err := l.forwardFetch(ctx, &allowed)
		if err != nil {
			return nil, err
		}
		for _, g := range r.(*kmsg.OffsetFetchResponse).Groups {
			fwd[g.Group] = g
		}
	}
	for _, g := range body.Groups {
		if code, bad := denied[g.Group]; bad {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = g.Group, code
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		if rg, ok := fwd[g.Group]; ok {
			resp.Groups = append(resp.Groups, rg)
		}
	}
	return resp, nil
}

func (l *Loop) forwardFetch(ctx context.Context, body *kmsg.OffsetFetchRequest) (kmsg.Response, error) {
	resp, err := l.offsetStore().FetchOffsets(ctx, body)
	if err != nil {
		// This process is the group's coordinator; only its offsets are
		// not readable yet (say the data plane is still creating
		// __consumer_offsets). COORDINATOR_LOAD_IN_PROGRESS makes a client
		// retry the fetch. COORDINATOR_NOT_AVAILABLE would make a Java
		// consumer forget its coordinator, and one closed before it found
		// it again sends no LeaveGroup: the group would keep the member,
		// and its partitions, until its session timed out.
		l.log.Warn("offset fetch forwarding failed", "err", err)
		return wire.ErrorResponse(body, kerr.CoordinatorLoadInProgress.Code), nil
	}
	noOffsetsYet(body, resp)
	return resp, nil
}

// noOffsetsYet rewrites the data plane's GROUP_ID_NOT_FOUND (the data plane
// has no offsets for a group core allowed) into Kafka's answer for a group
// without committed offsets: every requested partition at offset -1, no
// error. kfake answers GROUP_ID_NOT_FOUND there; Kafka does not.
func noOffsetsYet(req *kmsg.OffsetFetchRequest, resp *kmsg.OffsetFetchResponse) {
	notFound := kerr.GroupIDNotFound.Code
	if req.Version < 8 {
		if resp.ErrorCode != notFound {
			return
		}
		resp.ErrorCode, resp.Topics = 0, nil
		for _, t := range req.Topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch = p, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return
	}
	byGroup := map[string]kmsg.OffsetFetchRequestGroup{}
	for _, g := range req.Groups {
		byGroup[g.Group] = g
	}
	for i := range resp.Groups {
		rg := &resp.Groups[i]
		if rg.ErrorCode != notFound {
			continue
		}
		rg.ErrorCode, rg.Topics = 0, nil
		for _, t := range byGroup[rg.Group].Topics {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch = p, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			rg.Topics = append(rg.Topics, rt)
		}
	}
}

// offsetDelete decides and forwards an OffsetDelete as one step of the
// group's offset queue.
func (l *Loop) offsetDelete(ctx context.Context, req *wire.Request, body *kmsg.OffsetDeleteRequest) (kmsg.Response, error) {
	return l.gated(ctx, []string{body.Group}, func() (kmsg.Response, error) { return l.offsetDeleteStep(ctx, req, body) })
}

func (l *Loop) offsetDeleteStep(ctx context.Context, req *wire.Request, body *kmsg.OffsetDeleteRequest) (kmsg.Response, error) {
	var d core.OffsetDeleteDecision
	if err := l.readGroup(ctx, body.Group, func(c *core.Coordinator, _ int64) core.Output { d = c.DecideOffsetDelete(body); return core.Output{} }); err != nil {
		return submitError(req, err), nil
	}
	if d.ErrorCode != 0 {
		return wire.ErrorResponse(body, d.ErrorCode), nil
	}
	subscribed := map[string]bool{}
	for _, t := range d.Subscribed {
		subscribed[t] = true
	}
	allowed := *body
	allowed.Topics = nil
	for _, t := range body.Topics {
		if !subscribed[t.Topic] {
			allowed.Topics = append(allowed.Topics, t)
		}
	}
	resp := kmsg.NewPtrOffsetDeleteResponse()
	resp.SetVersion(body.Version)
	// a group coordhost does not hold and no topic (every topic refused by
	// authorization): the data plane answers for the group as Kafka does
	// (GROUP_ID_NOT_FOUND when it has no offsets)
	if len(allowed.Topics) > 0 || (len(body.Topics) == 0 && d.NotHeld) {
		r, unsent, err := writeOffsets(l, req, body, body.Group, func(w offsets.Writer) (*kmsg.OffsetDeleteResponse, error) {
			return w.DeleteOffsets(l.ctx, &allowed)
		})
		if unsent != nil {
			return unsent, nil
		}
		if err != nil {
			l.log.Warn("offset delete forwarding failed; reading the group back", "group", body.Group, "err", err)
			l.readBackGroup(body.Group)
			return wire.ErrorResponse(body, kerr.CoordinatorNotAvailable.Code), nil
		}
		resp = r
	}
	for _, t := range body.Topics {
		if !subscribed[t.Topic] {
			continue
		}
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kerr.GroupSubscribedToTopic.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// deleteGroups deletes core's groups (tombstones, durable before the answer)
// and then the groups' offsets in the data plane; a group only the data
// plane knows (offsets-only) is deleted there.
// With offsets written as the client (offsets_identity.go) the data
// plane's deletes are the principal's, and a group the cluster refuses to
// let it delete is answered so before core deletes anything.
func (l *Loop) deleteGroups(ctx context.Context, req *wire.Request, body *kmsg.DeleteGroupsRequest) (kmsg.Response, error) {
	deleter, body, refused := l.groupOffsetsDeleter(ctx, req, body)
	resp, err := l.deleteCoreGroups(ctx, req, body)
	if err != nil {
		return nil, err
	}
	defer func() { resp.Groups = append(resp.Groups, refused...) }()
	var names []string
	for _, g := range resp.Groups {
		if g.ErrorCode == 0 || g.ErrorCode == kerr.GroupIDNotFound.Code {
			names = append(names, g.Group)
		}
	}
	if len(names) == 0 || deleter == nil {
		return resp, nil
	}
	dpOnly := map[string]bool{}
	if l.d.DataPlane != nil {
		if groups, err := l.d.DataPlane.OffsetsOnlyGroups(ctx); err == nil {
			for _, g := range groups {
				dpOnly[g] = true
			}
		}
	}
	res, err := deleter.DeleteGroupOffsets(ctx, names)
	if err != nil {
		l.log.Warn("deleting groups' offsets in the data plane failed", "groups", names, "err", err)
		return resp, nil
	}
	for i := range resp.Groups {
		g := &resp.Groups[i]
		e, ok := res[g.Group]
		switch {
		case !ok:
		case g.ErrorCode == kerr.GroupIDNotFound.Code && e == nil && dpOnly[g.Group]:
			g.ErrorCode = 0
		case g.ErrorCode == 0 && e != nil:
			g.ErrorCode = deleteErrorCode(e)
		}
	}
	return resp, nil
}

// describeGroups describes core's classic groups; a group core does not
// hold but the data plane has offsets for is shown as Kafka shows a group
// made by offset commits alone: Empty, protocol type "", no members.
func (l *Loop) describeGroups(ctx context.Context, req *wire.Request, body *kmsg.DescribeGroupsRequest) (kmsg.Response, error) {
	resp, err := l.describeCoreGroups(ctx, body)
	if err != nil {
		return submitError(req, err), nil
	}
	if l.d.DataPlane == nil {
		return resp, nil
	}
	ids := make([]string, len(resp.Groups))
	for i, g := range resp.Groups {
		ids[i] = g.Group
	}
	held, err := l.heldGroups(ctx, ids)
	if err != nil {
		return submitError(req, err), nil
	}
	var dpOnly map[string]bool
	for i := range resp.Groups {
		g := &resp.Groups[i]
		if held[i] || g.Group == "" {
			continue
		}
		if dpOnly == nil {
			dpOnly = map[string]bool{}
			if groups, err := l.d.DataPlane.OffsetsOnlyGroups(ctx); err == nil {
				for _, id := range groups {
					dpOnly[id] = true
				}
			}
		}
		if dpOnly[g.Group] {
			g.ErrorCode, g.ErrorMessage, g.State, g.ProtocolType, g.Protocol = 0, nil, "Empty", "", ""
			g.Members, g.AuthorizedOperations = []kmsg.DescribeGroupsResponseGroupMember{}, -2147483648
		}
	}
	return resp, nil
}

// listGroups lists core's groups plus the data plane's offsets-only groups
// core does not hold (as Kafka lists a group made by offset commits alone:
// an Empty classic group with protocol type "").
func (l *Loop) listGroups(ctx context.Context, req *wire.Request, body *kmsg.ListGroupsRequest) (kmsg.Response, error) {
	var dpGroups []string
	if l.d.DataPlane != nil && filterAllows(body.StatesFilter, "empty") && filterAllows(body.TypesFilter, "classic") {
		var err error
		if dpGroups, err = l.d.DataPlane.OffsetsOnlyGroups(ctx); err != nil {
			l.log.Warn("listing the data plane's offsets-only groups failed", "err", err)
		}
		// A node of a cluster lists the groups of its own partitions only,
		// as a Kafka broker lists the groups it coordinates.
		dpGroups = slices.DeleteFunc(dpGroups, func(id string) bool { return l.elsewhere(l.rt.PartitionFor(id)) })
	}
	resp, err := l.listCoreGroups(ctx, body)
	if err != nil {
		return submitError(req, err), nil
	}
	held, err := l.heldGroups(ctx, dpGroups)
	if err != nil {
		return submitError(req, err), nil
	}
	for i, id := range dpGroups {
		if held[i] {
			continue
		}
		g := kmsg.NewListGroupsResponseGroup()
		g.Group, g.ProtocolType, g.GroupState, g.GroupType = id, "", "Empty", "classic"
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}

func filterAllows(filter []string, v string) bool {
	if len(filter) == 0 {
		return true
	}
	for _, f := range filter {
		if equalFold(f, v) {
			return true
		}
	}
	return false
}
