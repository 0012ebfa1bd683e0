package core

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// deleteGroups handles a deleteGroups request for the groups core holds:
// an empty group of any kind is deleted by writing its kind's tombstones
// (groupDeleters); a group with members gets NON_EMPTY_GROUP and an unknown
// id GROUP_ID_NOT_FOUND. Deleting the group's committed offsets in the data
// plane is the host's job once the records are durable.
func (c *Coordinator) deleteGroups(now int64, id RequestID, req *kmsg.DeleteGroupsRequest) Output {
	c.begin(now)
	resp := kmsg.NewPtrDeleteGroupsResponse()
	resp.Version = req.Version
	for _, name := range req.Groups {
		r := kmsg.NewDeleteGroupsResponseGroup()
		r.Group = name
		r.ErrorCode = c.deleteGroup(name)
		resp.Groups = append(resp.Groups, r)
	}
	c.respond(id, resp)
	return c.end()
}

func (c *Coordinator) deleteGroup(name string) int16 {
	g, ok := c.groups[name]
	if !ok {
		return kerr.GroupIDNotFound.Code
	}
	if !g.IsEmpty() {
		return kerr.NonEmptyGroup.Code
	}
	del := groupDeleters[g.Kind()]
	if del == nil {
		return kerr.UnknownServerError.Code
	}
	del(c, g)
	c.emitGroup(EventGroupDeleted, name, "", 0)
	for _, key := range c.timerKeysOfGroup(name) {
		c.cancelTimer(key)
	}
	return 0
}
