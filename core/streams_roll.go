package core

// A shorter heartbeat for every streams member while a group is being
// rolled (streams.rebalance.heartbeat.interval.ms; a deliberate difference
// from Kafka, off by default, docs/RATIONALE.md).
//
// No answer reaches a member between its heartbeats: when a target
// changes, an old owner learns that a task is revoked at its next regular
// heartbeat, up to one configured interval later. In a rolling restart the
// target changes when the restarted instance rejoins, a few seconds after
// its old incarnation left; so the members are told the shorter interval
// from the moment a member leaves or is fenced, and are on it when the
// target changes. The group is "in a roll":
//   - for one session timeout of the group after the last member left or
//     was fenced (a streams or a classic member of the group, static
//     leaves included): a departed member that comes back does so within
//     a session, which is why static membership keeps its tasks that long;
//   - while the group is Assigning or Reconciling: its target is ahead of
//     a member (the group epoch ahead of the assignment epoch, or a member
//     with revocations pending or tasks not yet released to it).
//
// The departure time is soft state (streamsSoft.lastDeparture): a replay
// does not rebuild it, so a coordinator that took the group over starts
// with no departure window open; the Assigning / Reconciling half is
// derived from replayed records and holds after a fail-over as before.

// noteRollDeparture opens (or extends) g's roll window: a member left or
// was fenced now. Undone with the batch.
func (c *Coordinator) noteRollDeparture(g *streamsGroup) {
	old, had := g.soft.lastDeparture, g.soft.departed
	if had && old == c.now {
		return // a mass expiry: one step, one entry
	}
	g.soft.lastDeparture, g.soft.departed = c.now, true
	c.onUndo(func() { g.soft.lastDeparture, g.soft.departed = old, had })
}

// inRoll reports whether g is in a roll at the core's clock, with
// sessionMs the group's session timeout.
func (c *Coordinator) inRoll(g *streamsGroup, sessionMs int32) bool {
	if g.state == StreamsAssigning || g.state == StreamsReconciling {
		return true
	}
	return g.soft.departed && c.now-g.soft.lastDeparture <= int64(sessionMs)
}

// rollInterval is the interval answered to a streams member of a group of
// members members in a roll: the configured rebalance interval, at least
// MinRebalanceHeartbeatIntervalMs and RebalanceHeartbeatMsPerMember per
// member, never longer than the configured heartbeat interval. With the
// setting off it is the configured heartbeat interval.
func rollInterval(cfg StreamsConfig, members int) int32 {
	r := cfg.RebalanceHeartbeatIntervalMs
	if r <= 0 {
		return cfg.HeartbeatIntervalMs
	}
	bound := int64(members) * RebalanceHeartbeatMsPerMember
	return int32(min(max(int64(r), MinRebalanceHeartbeatIntervalMs, bound), int64(cfg.HeartbeatIntervalMs)))
}

// answeredInterval is the heartbeat interval answered to m, a member of g:
// the configured interval (Kafka 4.4), or shorter with either of
// coordhost's two settings on — the waiting member's
// (heartbeatInterval) and, while g is in a roll, every member's
// (rollInterval); the shorter of those that apply.
func (c *Coordinator) answeredInterval(g *streamsGroup, cfg StreamsConfig, m *streamsMember) int32 {
	iv := heartbeatInterval(cfg, m)
	if cfg.RebalanceHeartbeatIntervalMs > 0 && c.inRoll(g, cfg.SessionTimeoutMs) {
		iv = min(iv, rollInterval(cfg, len(g.members)))
	}
	return iv
}
