package authz

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (c *check) describeGroups(b *kmsg.DescribeGroupsRequest) (kmsg.Response, error) {
	set := func(gs []string) kmsg.Request { s := *b; s.Groups = gs; return &s }
	return byItem(c, b.Groups, set, kmsg.ACLResourceTypeGroup, ident, opDescribe, codeGroup, func(r, refused *kmsg.DescribeGroupsResponse) error {
		err := c.fillOps(b.IncludeAuthorizedOperations, len(r.Groups), func(i int) (string, int16, *int32) {
			return r.Groups[i].Group, r.Groups[i].ErrorCode, &r.Groups[i].AuthorizedOperations
		})
		if err != nil {
			return err
		}
		r.Groups = append(refused.Groups, r.Groups...)
		return nil
	})
}

// streamsGroupDescribe: DESCRIBE on each group, as DescribeGroups; then a
// described group whose topology holds a topic the principal may not
// DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED with no members and no
// topology (Kafka 4.4 KafkaApis; members' tasks are not topics and are not
// checked).
func (c *check) streamsGroupDescribe(b *kmsg.StreamsGroupDescribeRequest) (kmsg.Response, error) {
	set := func(gs []string) kmsg.Request { s := *b; s.Groups = gs; return &s }
	return byItem(c, b.Groups, set, kmsg.ACLResourceTypeGroup, ident, opDescribe, codeGroup, func(r, refused *kmsg.StreamsGroupDescribeResponse) error {
		err := c.fillOps(b.IncludeAuthorizedOperations, len(r.Groups), func(i int) (string, int16, *int32) {
			return r.Groups[i].Group, r.Groups[i].ErrorCode, &r.Groups[i].AuthorizedOperations
		})
		if err != nil {
			return err
		}
		r.Groups = append(refused.Groups, r.Groups...)
		r.Groups, err = hideGroups(c, r.Groups, describedTopologyTopics, func(g kmsg.StreamsGroupDescribeResponseGroup) kmsg.StreamsGroupDescribeResponseGroup {
			ng := kmsg.NewStreamsGroupDescribeResponseGroup()
			ng.Group, ng.ErrorCode = g.Group, codeTopic
			ng.ErrorMessage = kmsg.StringPtr(topologyTopicsRefused)
			ng.Members = []kmsg.StreamsGroupDescribeResponseGroupMember{}
			return ng
		})
		return err
	})
}

// topologyTopicsRefused is Kafka's message for a streams group whose
// topology holds a topic the principal may not DESCRIBE.
const topologyTopicsRefused = "The described group uses topics that the client is not authorized to describe."

// describedTopologyTopics are the topics of a described streams group's
// topology (none when the group has no topology, as a refused one).
func describedTopologyTopics(g kmsg.StreamsGroupDescribeResponseGroup) []string {
	var out []string
	if g.Topology != nil {
		for _, st := range g.Topology.Subtopologies {
			out = append(out, topologyTopics(st.SourceTopics, st.RepartitionSinkTopics, st.RepartitionSourceTopics, st.StateChangelogTopics)...)
		}
	}
	return out
}

// topologyTopics are the names of a subtopology's source, repartition sink,
// repartition source and state changelog topics.
func topologyTopics(source, sink []string, repartition, changelog []kmsg.TopicInfo) []string {
	out := slices.Concat(source, sink)
	for _, t := range slices.Concat(repartition, changelog) {
		out = append(out, t.Topic)
	}
	return out
}

// hideGroups replaces every group that shows a topic the principal may not
// DESCRIBE (topics names them) by hidden(group), as Kafka 4.4 answers
// ConsumerGroupDescribe and StreamsGroupDescribe; the topics are asked at
// once and refusals logged.
func hideGroups[G any](c *check, groups []G, topics func(G) []string, hidden func(G) G) ([]G, error) {
	var all []string
	for _, g := range groups {
		all = append(all, topics(g)...)
	}
	slices.Sort(all)
	ok, err := c.allowedSet(kmsg.ACLResourceTypeTopic, slices.Compact(all), opDescribe)
	if err != nil {
		return nil, err
	}
	for i, g := range groups {
		if slices.ContainsFunc(topics(g), func(t string) bool { return !ok[t] }) {
			groups[i] = hidden(g)
		}
	}
	return groups, nil
}

func ident(s string) string { return s }

// streamsGroupHeartbeat: READ on the group, then DESCRIBE on every topic
// of the topology (source, repartition and changelog topics), refused with
// TOPIC_AUTHORIZATION_FAILED naming the topics.
func (c *check) streamsGroupHeartbeat(b *kmsg.StreamsGroupHeartbeatRequest) (kmsg.Response, error) {
	if ok, err := c.allowed(kmsg.ACLResourceTypeGroup, b.Group, opRead); err != nil || !ok {
		return denied(b, codeGroup), err
	}
	var topics []string
	if b.Topology != nil {
		for _, st := range b.Topology.Subtopologies {
			topics = append(topics, topologyTopics(st.SourceTopics, st.RepartitionSinkTopics, st.RepartitionSourceTopics, st.StateChangelogTopics)...)
		}
	}
	ok, err := c.allowedSet(kmsg.ACLResourceTypeTopic, topics, opDescribe)
	if err != nil {
		return nil, err
	}
	var refused []string
	for _, t := range topics {
		if !ok[t] && !slices.Contains(refused, t) {
			refused = append(refused, t)
		}
	}
	if len(refused) == 0 {
		resp, err := c.inner(b)
		if err != nil {
			return nil, err
		}
		return c.createInternalTopics(b, resp)
	}
	resp := denied(b, codeTopic).(*kmsg.StreamsGroupHeartbeatResponse)
	resp.ErrorMessage = kmsg.StringPtr("Unauthorized topics: " + strings.Join(refused, ", "))
	return resp, nil
}

// listGroups: DESCRIBE on the cluster lists every group, otherwise only
// the groups the principal may DESCRIBE (not logged as denials, as Kafka).
func (c *check) listGroups(b *kmsg.ListGroupsRequest) (kmsg.Response, error) {
	resp, err := c.inner(b)
	if err != nil {
		return nil, err
	}
	r, isList := resp.(*kmsg.ListGroupsResponse)
	if !isList || r.ErrorCode != 0 {
		return resp, nil
	}
	all, err := c.decideSet(kmsg.ACLResourceTypeCluster, []string{"kafka-cluster"}, opDescribe, false)
	if err != nil || all["kafka-cluster"] {
		return r, err
	}
	name := func(g kmsg.ListGroupsResponseGroup) string { return g.Group }
	ok, err := c.decideSet(kmsg.ACLResourceTypeGroup, names(r.Groups, name), opDescribe, false)
	if err != nil {
		return nil, err
	}
	r.Groups, _ = keep(r.Groups, func(g kmsg.ListGroupsResponseGroup) bool { return ok[g.Group] })
	return r, nil
}

func (c *check) deleteGroups(b *kmsg.DeleteGroupsRequest) (kmsg.Response, error) {
	set := func(gs []string) kmsg.Request { s := *b; s.Groups = gs; return &s }
	return byItem(c, b.Groups, set, kmsg.ACLResourceTypeGroup, ident, opDelete, codeGroup, func(r, refused *kmsg.DeleteGroupsResponse) error {
		r.Groups = append(r.Groups, refused.Groups...)
		return nil
	})
}

// findCoordinator (group keys only reach the coordinator).
func (c *check) findCoordinator(b *kmsg.FindCoordinatorRequest) (kmsg.Response, error) {
	if b.Version < 4 {
		ok, err := c.allowed(kmsg.ACLResourceTypeGroup, b.CoordinatorKey, opDescribe)
		if err != nil || !ok {
			r := denied(b, codeGroup).(*kmsg.FindCoordinatorResponse)
			r.NodeID, r.Port = -1, -1
			return r, err
		}
		return c.inner(b)
	}
	set := func(keys []string) kmsg.Request { s := *b; s.CoordinatorKeys = keys; return &s }
	return byItem(c, b.CoordinatorKeys, set, kmsg.ACLResourceTypeGroup, ident, opDescribe, codeGroup, func(r, refused *kmsg.FindCoordinatorResponse) error {
		for _, rc := range refused.Coordinators {
			rc.NodeID, rc.Port = -1, -1
			r.Coordinators = append(r.Coordinators, rc)
		}
		return nil
	})
}

// The config APIs reach the coordinator with GROUP resources only.

func (c *check) describeConfigs(b *kmsg.DescribeConfigsRequest) (kmsg.Response, error) {
	set := func(rs []kmsg.DescribeConfigsRequestResource) kmsg.Request { s := *b; s.Resources = rs; return &s }
	name := func(r kmsg.DescribeConfigsRequestResource) string { return r.ResourceName }
	return byItem(c, b.Resources, set, kmsg.ACLResourceTypeGroup, name, opDescConf, codeGroup, func(r, refused *kmsg.DescribeConfigsResponse) error {
		r.Resources = append(r.Resources, refused.Resources...)
		return nil
	})
}

func (c *check) alterConfigs(b *kmsg.AlterConfigsRequest) (kmsg.Response, error) {
	set := func(rs []kmsg.AlterConfigsRequestResource) kmsg.Request { s := *b; s.Resources = rs; return &s }
	name := func(r kmsg.AlterConfigsRequestResource) string { return r.ResourceName }
	return byItem(c, b.Resources, set, kmsg.ACLResourceTypeGroup, name, opAlterConf, codeGroup, func(r, refused *kmsg.AlterConfigsResponse) error {
		r.Resources = append(r.Resources, refused.Resources...)
		return nil
	})
}

func (c *check) incrementalAlterConfigs(b *kmsg.IncrementalAlterConfigsRequest) (kmsg.Response, error) {
	set := func(rs []kmsg.IncrementalAlterConfigsRequestResource) kmsg.Request {
		s := *b
		s.Resources = rs
		return &s
	}
	name := func(r kmsg.IncrementalAlterConfigsRequestResource) string { return r.ResourceName }
	return byItem(c, b.Resources, set, kmsg.ACLResourceTypeGroup, name, opAlterConf, codeGroup, func(r, refused *kmsg.IncrementalAlterConfigsResponse) error {
		r.Resources = append(r.Resources, refused.Resources...)
		return nil
	})
}
