package core

import "github.com/twmb/franz-go/pkg/kmsg"

// memberOffsets is a member's last reported changelog offsets: soft state,
// never persisted, kept outside rollback.
type memberOffsets struct {
	offsets, endOffsets map[TaskID]int64
}

// storeTaskOffsets records reported offsets; null lists keep the old ones.
func (c *Coordinator) storeTaskOffsets(g *streamsGroup, member string, req *kmsg.StreamsGroupHeartbeatRequest) {
	o := g.soft.taskOffsets[member]
	conv := func(l []kmsg.TaskOffset) map[TaskID]int64 {
		m := make(map[TaskID]int64, len(l))
		for _, t := range l {
			m[TaskID{t.SubtopologyID, t.Partition}] = t.Offset
		}
		return m
	}
	if req.TaskOffsets != nil {
		o.offsets = conv(req.TaskOffsets)
	}
	if req.TaskEndOffsets != nil {
		o.endOffsets = conv(req.TaskEndOffsets)
	}
	if o.offsets == nil && o.endOffsets == nil {
		return // nothing reported yet: an absent entry reads the same, and costs no map slot
	}
	g.putTaskOffsets(member, o)
}

// putTaskOffsets stores a member's reported offsets; the map is made on the
// first report (a nil map reads as no report).
func (g *streamsGroup) putTaskOffsets(member string, o memberOffsets) {
	if g.soft.taskOffsets == nil {
		g.soft.taskOffsets = map[string]memberOffsets{}
	}
	g.soft.taskOffsets[member] = o
}
