package core

import (
	"fmt"

	"github.com/coordhost/coordhost/core/records"
)

// Classic group record type 2 (GroupMetadata) is defined and encoded in
// package records (records/classic.go); this file applies it and builds
// the records the classic path writes.

func init() {
	registerApplier(records.RecGroupMetadata, applyGroupMetadata)
	groupDeleters[GroupKindClassic] = func(c *Coordinator, g Group) {
		c.write(records.Record{Key: records.GroupMetadataKey{GroupID: g.ID()}})
	}
}

// applyGroupMetadata applies a GroupMetadata record. While replaying, it
// rebuilds the group from the value (GroupMetadataManager.replay); in the
// live path the in-memory group already holds the state the record
// describes (Kafka does not replay its own classic records), so it only
// remembers the value as the durable generation. A tombstone removes the
// group.
func applyGroupMetadata(c *Coordinator, rec records.Record) error {
	id := rec.Key.Group()
	existing, had := c.groups[id]
	if had && existing.Kind() != GroupKindClassic {
		return fmt.Errorf("group %q is a %s group, not classic", id, existing.Kind())
	}
	if rec.Value == nil {
		if had {
			c.putGroup(id, nil)
		}
		return nil
	}
	v := rec.Value.(records.GroupMetadataValue)
	if c.replaying || !had {
		c.putGroup(id, classicGroupFromRecord(id, v))
		return nil
	}
	g := existing.(*classicGroup)
	old := g.durable
	g.durable = &v
	c.onUndo(func() { g.durable = old })
	return nil
}

// classicGroupFromRecord builds a loaded group: Stable with its members,
// or Empty.
func classicGroupFromRecord(id string, v records.GroupMetadataValue) *classicGroup {
	g := newClassicGroup(id)
	g.generation = v.Generation
	if v.ProtocolType != "" {
		pt := v.ProtocolType
		g.protocolType = &pt
	}
	g.protocolName = v.Protocol
	g.leader = v.Leader
	g.stateTime = v.CurrentStateTimestamp
	for _, mm := range v.Members {
		rto := mm.RebalanceTimeout
		if rto == -1 {
			rto = mm.SessionTimeout
		}
		m := &classicMember{id: mm.MemberID, instanceID: mm.GroupInstanceID, clientID: mm.ClientID, clientHost: mm.ClientHost,
			rebalanceTimeoutMs: rto, sessionTimeoutMs: mm.SessionTimeout, protocolType: v.ProtocolType,
			protocols: []classicProtocol{{name: deref0(v.Protocol), metadata: mm.Subscription}}, assignment: mm.Assignment}
		if m.instanceID != nil {
			g.static[*m.instanceID] = m.id
		}
		g.members[m.id] = m
		g.order = append(g.order, m.id)
	}
	if len(v.Members) > 0 {
		g.state = classicStable
	}
	g.leader = v.Leader
	vc := v
	g.durable = &vc
	return g
}

func deref0(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// groupMetadataRecord builds the record of g's current generation with the
// given assignments (GroupCoordinatorRecordHelpers.newGroupMetadataRecord).
func groupMetadataRecord(g *classicGroup, assignment map[string][]byte) records.Record {
	v := records.GroupMetadataValue{Version: records.GroupMetadataWriteVersion, ProtocolType: deref0(g.protocolType), Generation: g.generation,
		Protocol: g.protocolName, Leader: g.leader, CurrentStateTimestamp: g.stateTime, Members: []records.GroupMetadataMember{}}
	for _, m := range g.allMembers() {
		sub := m.metadata(deref0(g.protocolName))
		if sub == nil {
			sub = []byte{}
		}
		a := assignment[m.id]
		if a == nil {
			a = []byte{}
		}
		v.Members = append(v.Members, records.GroupMetadataMember{MemberID: m.id, GroupInstanceID: m.instanceID, ClientID: m.clientID,
			ClientHost: m.clientHost, RebalanceTimeout: m.rebalanceTimeoutMs, SessionTimeout: m.sessionTimeoutMs,
			Subscription: sub, Assignment: a})
	}
	return records.Record{Key: records.GroupMetadataKey{GroupID: g.id}, Value: v}
}

// emptyGroupMetadataRecord is newEmptyGroupMetadataRecord: written when a
// group is created without other records.
func emptyGroupMetadataRecord(g *classicGroup) records.Record {
	return records.Record{Key: records.GroupMetadataKey{GroupID: g.id}, Value: records.GroupMetadataValue{Version: records.GroupMetadataWriteVersion,
		CurrentStateTimestamp: g.stateTime, Members: []records.GroupMetadataMember{}}}
}
