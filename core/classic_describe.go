package core

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeGroups answers a describeGroups request from committed state
// (call it between batches). A Stable group shows its protocol and each
// member's metadata and assignment; other states show members without
// metadata. An id that is not a classic group is Dead (v6+: with
// GROUP_ID_NOT_FOUND and a message), as in Kafka 4.4; the host may fill in
// offsets-only groups of its data plane.
func (c *Coordinator) describeGroups(req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	resp := kmsg.NewPtrDescribeGroupsResponse()
	resp.Version = req.Version
	for _, id := range req.Groups {
		resp.Groups = append(resp.Groups, c.describeClassic(id, req.Version))
	}
	return resp
}

func (c *Coordinator) describeClassic(id string, version int16) kmsg.DescribeGroupsResponseGroup {
	d := kmsg.NewDescribeGroupsResponseGroup()
	d.Group = id
	if id == "" {
		d.ErrorCode = errInvalidGroupID
		return d
	}
	g, ok := c.groups[id].(*classicGroup)
	if !ok {
		d.State = classicDead.String()
		if version >= 6 {
			d.ErrorCode = errGroupIDNotFound
			msg := "Group " + id + " is not a classic group."
			if _, exists := c.groups[id]; !exists {
				msg = "Group " + id + " not found."
			}
			d.ErrorMessage = &msg
		}
		return d
	}
	d.State, d.ProtocolType = g.state.String(), deref0(g.protocolType)
	d.AuthorizedOperations = -2147483648
	stable := g.state == classicStable
	if stable {
		d.Protocol = deref0(g.protocolName)
	}
	d.Members = []kmsg.DescribeGroupsResponseGroupMember{}
	for _, m := range g.allMembers() {
		dm := kmsg.DescribeGroupsResponseGroupMember{MemberID: m.id, InstanceID: m.instanceID, ClientID: m.clientID,
			ClientHost: m.clientHost, MemberAssignment: nonNilBytes(m.assignment), ProtocolMetadata: []byte{}}
		if stable {
			dm.ProtocolMetadata = nonNilBytes(m.metadata(d.Protocol))
		}
		d.Members = append(d.Members, dm)
	}
	return d
}

func nonNilBytes(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// listGroups lists every group core holds, of every kind, filtered by
// state (case-insensitive) and type ("classic", "streams"), as Kafka's
// listGroups does. Call it between batches. The host adds offsets-only
// groups of its data plane.
func (c *Coordinator) listGroups(req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := kmsg.NewPtrListGroupsResponse()
	resp.Version = req.Version
	states := map[string]bool{}
	for _, s := range req.StatesFilter {
		states[strings.ToLower(strings.TrimSpace(s))] = true
	}
	types := map[string]bool{}
	for _, t := range req.TypesFilter {
		types[strings.ToLower(strings.TrimSpace(t))] = true
	}
	for _, id := range c.groupIDs() {
		g := c.groups[id]
		if len(states) > 0 && !states[strings.ToLower(g.StateName())] {
			continue
		}
		if len(types) > 0 && !types[g.Kind().String()] {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.GroupState, lg.GroupType = id, g.StateName(), g.Kind().String()
		switch x := g.(type) {
		case *classicGroup:
			lg.ProtocolType = deref0(x.protocolType)
		default:
			lg.ProtocolType = g.Kind().String() // streams groups list protocol type "streams"
		}
		resp.Groups = append(resp.Groups, lg)
	}
	return resp
}
