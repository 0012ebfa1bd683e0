package gateway

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The data plane never sees coordhost's groups' members (group APIs are
// never forwarded), so every group it knows is an offsets-only group: one
// whose offsets were committed through coordhost, or by tools talking to
// the cluster directly. ListGroups/DescribeGroups show them as Empty and
// DeleteGroups deletes their offsets; these helpers give the event loop
// that view.

// OffsetsOnlyGroups lists the group ids the data plane holds offsets for.
func (d *DataPlane) OffsetsOnlyGroups(ctx context.Context) ([]string, error) {
	req := kmsg.NewPtrListGroupsRequest()
	shards := d.admin.RequestSharded(ctx, req)
	var out []string
	for _, s := range shards {
		if s.Err != nil {
			return nil, fmt.Errorf("data-plane list groups (node %d): %w", s.Meta.NodeID, s.Err)
		}
		resp := s.Resp.(*kmsg.ListGroupsResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return nil, fmt.Errorf("data-plane list groups (node %d): %w", s.Meta.NodeID, err)
		}
		for _, g := range resp.Groups {
			out = append(out, g.Group)
		}
	}
	return out, nil
}

// DeleteGroupOffsets deletes groups (their committed offsets) in the data
// plane. The result maps each group to nil or the data plane's error;
// GROUP_ID_NOT_FOUND counts as deleted.
func (d *DataPlane) DeleteGroupOffsets(ctx context.Context, groups []string) (map[string]error, error) {
	return deleteGroupOffsets(ctx, d.admin, groups)
}

func deleteGroupOffsets(ctx context.Context, cl *kgo.Client, groups []string) (map[string]error, error) {
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Groups = groups
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("data-plane delete groups: %w", err)
	}
	out := make(map[string]error, len(resp.Groups))
	for _, g := range resp.Groups {
		if g.ErrorCode == kerr.GroupIDNotFound.Code {
			out[g.Group] = nil
			continue
		}
		out[g.Group] = kerr.ErrorForCode(g.ErrorCode)
	}
	return out, nil
}
