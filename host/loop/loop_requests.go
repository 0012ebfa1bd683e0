package loop

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host/authz"
	"github.com/coordhost/coordhost/host/offsets"
	"github.com/coordhost/coordhost/host/wire"
)

// Handle answers one group-coordination request (GroupCoordinator): one
// the wire table routes to the group coordinator (RouteGroup, or the
// group part of a RouteSplit key), answered by its key's row of
// groupHandlers.
func (l *Loop) Handle(ctx context.Context, req *wire.Request) (kmsg.Response, error) {
	l.stats.requests.Add(1)
	h, ok := groupHandlers[kmsg.Key(req.Key)]
	if !ok {
		return nil, fmt.Errorf("group coordinator: %s is not a group request", kmsg.NameForKey(req.Key))
	}
	return h(l, ctx, req)
}

// groupHandler answers one key's group requests.
type groupHandler func(l *Loop, ctx context.Context, req *wire.Request) (kmsg.Response, error)

// groupHandlers has a row for every key the wire table routes to the group
// coordinator (a test checks that they agree). The requests core changes
// state for go to core whole (stepped), core routes them by their body;
// the others have their own handler (typed).
var groupHandlers = map[kmsg.Key]groupHandler{
	kmsg.StreamsGroupHeartbeat:  stepped(countHeartbeat | configureGroup | prepareStreams),
	kmsg.ConsumerGroupHeartbeat: stepped(countHeartbeat | configureGroup | describableTopics),
	kmsg.JoinGroup:              stepped(configureGroup), // a classic join may convert a streams group
	kmsg.SyncGroup:              stepped(0),
	kmsg.Heartbeat:              stepped(countHeartbeat),
	kmsg.LeaveGroup:             stepped(0),

	kmsg.FindCoordinator: typed(func(l *Loop, _ context.Context, req *wire.Request, b *kmsg.FindCoordinatorRequest) (kmsg.Response, error) {
		return l.findCoordinator(req, b), nil
	}),
	kmsg.DeleteGroups:         typed((*Loop).deleteGroups),
	kmsg.StreamsGroupDescribe: typed((*Loop).describeStreamsGroups),
	kmsg.StreamsGroupTopologyDescriptionUpdate: typed(func(_ *Loop, _ context.Context, _ *wire.Request, b *kmsg.StreamsGroupTopologyDescriptionUpdateRequest) (kmsg.Response, error) {
		return core.StreamsGroupTopologyDescriptionUpdate(b), nil // reads no group state
	}),
	kmsg.ConsumerGroupDescribe: typed((*Loop).describeConsumerGroups),
	kmsg.DescribeGroups:        typed((*Loop).describeGroups),
	kmsg.ListGroups:            typed((*Loop).listGroups),

	kmsg.OffsetCommit:    offsetsHandler(typed((*Loop).offsetCommit)),
	kmsg.TxnOffsetCommit: offsetsHandler(typed((*Loop).txnOffsetCommit)),
	kmsg.OffsetFetch:     offsetsHandler(typed((*Loop).offsetFetch)),
	kmsg.OffsetDelete:    offsetsHandler(typed((*Loop).offsetDelete)),

	kmsg.DescribeConfigs:         typed((*Loop).describeGroupConfigs),
	kmsg.IncrementalAlterConfigs: (*Loop).alterConfigsByPartition,
	kmsg.AlterConfigs:            (*Loop).alterConfigsByPartition,
	kmsg.ListConfigResources:     (*Loop).listGroupConfigResources,
}

// steppedOpts are what the host adds to a stepped request.
type steppedOpts uint8

const (
	// countHeartbeat counts the request in the heartbeats metric.
	countHeartbeat steppedOpts = 1 << iota
	// configureGroup hands core the group's settings first.
	configureGroup
	// describableTopics filters the regular expressions a consumer
	// heartbeat resolves by the topics its principal may describe.
	describableTopics
	// prepareStreams does a streams heartbeat's state-independent work
	// (core.PrepareStreamsHeartbeat) on the request's goroutine, before
	// it is queued, so its partition's worker only compares and applies.
	prepareStreams
)

// stepped answers a request core steps whole (core.Request) in its
// group's partition.
func stepped(o steppedOpts) groupHandler {
	return func(l *Loop, ctx context.Context, req *wire.Request) (kmsg.Response, error) {
		resp, wait, err := l.beginStepped(ctx, req, o)
		if wait == nil {
			return resp, err
		}
		return wait(ctx)
	}
}

// beginKeys are the requests Begin steps without waiting, with their
// options (as groupHandlers has them).
var beginKeys = map[kmsg.Key]steppedOpts{
	kmsg.StreamsGroupHeartbeat:  countHeartbeat | configureGroup | prepareStreams,
	kmsg.ConsumerGroupHeartbeat: countHeartbeat | configureGroup | describableTopics,
	kmsg.Heartbeat:              countHeartbeat,
}

// Begin answers req as Handle does, without waiting: a heartbeat is
// stepped at once when its partition is idle, and its answer returned
// if it is ready then (it wrote no records). Otherwise wait, to be called
// on another goroutine, waits for the answer as Handle would have; every
// other request is left whole to wait.
func (l *Loop) Begin(ctx context.Context, req *wire.Request) (kmsg.Response, wire.Wait, error) {
	o, ok := beginKeys[kmsg.Key(req.Key)]
	if !ok {
		return nil, func(ctx context.Context) (kmsg.Response, error) { return l.Handle(ctx, req) }, nil
	}
	l.stats.requests.Add(1)
	return l.beginStepped(ctx, req, o)
}

// beginStepped steps req, a request core steps whole, in its group's
// partition; see beginSpent.
func (l *Loop) beginStepped(ctx context.Context, req *wire.Request, o steppedOpts) (kmsg.Response, wire.Wait, error) {
	client := core.ClientInfo{ClientID: req.ClientIDString(), ClientHost: req.ClientHost}
	if o&countHeartbeat != 0 {
		l.stats.heartbeats.Add(1)
	}
	if o&describableTopics != 0 {
		client.DescribableTopic = authz.DescribableTopics(ctx)
	}
	group, _ := requestGroup(req)
	var prep *core.PreparedStreamsHeartbeat
	var spent time.Duration
	if b, ok := req.Body.(*kmsg.StreamsGroupHeartbeatRequest); ok && o&prepareStreams != 0 {
		var err error
		if prep, spent, err = prepareStreamsHeartbeat(ctx, b); err != nil {
			return nil, nil, err
		}
	}
	// The preparation is the group's work too: beginSpent charges it
	// towards the group's quota with the request's decoding
	// (loop_quota.go).
	cl := &call{req: req, step: steppedArgs{opts: o, group: group, client: client, prep: prep}}
	return l.beginSpent(req, event{call: cl, stepped: true}, spent)
}

// steppedArgs are what stepped adds to a request core steps whole.
type steppedArgs struct {
	opts   steppedOpts
	group  string
	client core.ClientInfo
	prep   *core.PreparedStreamsHeartbeat
}

// stepCall steps cl's request whole, as stepped built it, in partition
// c's coordinator.
func (l *Loop) stepCall(c *core.Coordinator, now int64, id core.RequestID, cl *call) core.Output {
	st := &cl.step
	if st.opts&configureGroup != 0 {
		l.configure(c, st.group)
	}
	return l.step(c, now, core.Request{ID: id, Client: st.client, Body: cl.req.Body, Prepared: st.prep})
}

// typed adapts a handler of one request type.
func typed[R kmsg.Request](f func(l *Loop, ctx context.Context, req *wire.Request, body R) (kmsg.Response, error)) groupHandler {
	return func(l *Loop, ctx context.Context, req *wire.Request) (kmsg.Response, error) {
		body, ok := req.Body.(R)
		if !ok {
			return nil, fmt.Errorf("group coordinator: %s request with a %T body", kmsg.NameForKey(req.Key), req.Body)
		}
		return f(l, ctx, req, body)
	}
}

// offsetsHandler answers an offsets request with h, core deciding and the
// data plane storing: without a data plane, COORDINATOR_NOT_AVAILABLE.
func offsetsHandler(h groupHandler) groupHandler {
	return func(l *Loop, ctx context.Context, req *wire.Request) (kmsg.Response, error) {
		if l.offsetStore() == nil { // offsets live in the data plane
			return wire.ErrorResponse(req.Body, kerr.CoordinatorNotAvailable.Code), nil
		}
		return h(l, ctx, req)
	}
}

// step applies in to c (core.Coordinator.Step). core refuses only an
// input it does not take, which the host never builds: a bug, logged,
// with a request answered UNKNOWN_SERVER_ERROR rather than left waiting.
func (l *Loop) step(c *core.Coordinator, now int64, in core.Input) core.Output {
	out, err := c.Step(now, in)
	if err == nil {
		return out
	}
	l.log.Error("core refused an input", "err", err)
	if r, ok := in.(core.Request); ok && r.Body != nil {
		out.Responses = append(out.Responses, core.Response{Request: r.ID, Msg: wire.ErrorResponse(r.Body, kerr.UnknownServerError.Code)})
	}
	return out
}

// readCore answers a read request from c (core.Coordinator.Read); a
// request core does not read is a bug, logged and answered
// UNKNOWN_SERVER_ERROR.
func readCore[R kmsg.Response](l *Loop, c *core.Coordinator, req kmsg.Request) R {
	resp, err := c.Read(req)
	if err != nil {
		l.log.Error("core refused a read", "err", err)
		resp = wire.ErrorResponse(req, kerr.UnknownServerError.Code)
	}
	return resp.(R)
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

// decideOne asks group's partition for core's decision on an offsets
// request of one group that changes nothing (core.Coordinator.DecideOffsets).
func (l *Loop) decideOne(ctx context.Context, group string, body kmsg.Request) (core.OffsetDecision, error) {
	ds, err := l.decideOffsets(ctx, l.rt.PartitionFor(group), body)
	if err == nil && len(ds) != 1 {
		err = fmt.Errorf("core decided %s for %d groups, want 1", kmsg.NameForKey(body.Key()), len(ds))
	}
	if err != nil {
		return core.OffsetDecision{}, err
	}
	return ds[0], nil
}

// decideOffsets asks partition p for core's decisions on an offsets
// request that changes nothing.
func (l *Loop) decideOffsets(ctx context.Context, p int, body kmsg.Request) ([]core.OffsetDecision, error) {
	var ds []core.OffsetDecision
	var derr error
	if err := l.readOn(ctx, p, func(c *core.Coordinator, _ int64) core.Output {
		ds, derr = c.DecideOffsets(body)
		return core.Output{}
	}); err != nil {
		return nil, err
	}
	return ds, derr
}

// offsetCommit decides and forwards an OffsetCommit as one step of the
// group's offset queue (offsets_gate.go).
func (l *Loop) offsetCommit(ctx context.Context, req *wire.Request, body *kmsg.OffsetCommitRequest) (kmsg.Response, error) {
	return l.gated(ctx, l.commitClaim(body), func() (kmsg.Response, error) {
		var d core.OffsetDecision
		err := l.readGroup(ctx, body.Group, func(c *core.Coordinator, now int64) core.Output {
			out := l.step(c, now, core.Request{Body: body}) // may restart a classic member's session
			if len(out.Offsets) == 1 {
				d = out.Offsets[0]
			} else {
				d.ErrorCode = kerr.UnknownServerError.Code
			}
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
	return l.gated(ctx, offsets.Whole(body.Group), func() (kmsg.Response, error) {
		d, err := l.decideOne(ctx, body.Group, body)
		if err != nil {
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
// queue, so it sees every commit of its partitions allowed before it.
func (l *Loop) offsetFetch(ctx context.Context, req *wire.Request, body *kmsg.OffsetFetchRequest) (kmsg.Response, error) {
	return l.gated(ctx, l.fetchClaims(body), func() (kmsg.Response, error) { return l.offsetFetchStep(ctx, req, body) })
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
	return l.gated(ctx, offsets.Whole(body.Group), func() (kmsg.Response, error) { return l.offsetDeleteStep(ctx, req, body) })
}

func (l *Loop) offsetDeleteStep(ctx context.Context, req *wire.Request, body *kmsg.OffsetDeleteRequest) (kmsg.Response, error) {
	d, err := l.decideOne(ctx, body.Group, body)
	if err != nil {
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
//
// It is one step of each group's offset queue, claiming the whole group:
// a commit allowed before the deletion lands before the group's offsets
// are deleted, never after.
func (l *Loop) deleteGroups(ctx context.Context, req *wire.Request, body *kmsg.DeleteGroupsRequest) (kmsg.Response, error) {
	return l.gated(ctx, offsets.Whole(body.Groups...), func() (kmsg.Response, error) { return l.deleteGroupsStep(ctx, req, body) })
}

func (l *Loop) deleteGroupsStep(ctx context.Context, req *wire.Request, body *kmsg.DeleteGroupsRequest) (kmsg.Response, error) {
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
