package core

import (
	"fmt"
	"sort"
	"strings"

	"github.com/coordhost/coordhost/core/records"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Readable traces of Outputs, shared by the scenario tests and the
// property test (whose traces must be byte-identical across runs).

func fmtTaskIDs(ids []records.TaskIDs) string {
	var parts []string
	for _, id := range ids {
		for i, p := range id.Partitions {
			s := fmt.Sprintf("%s_%d", id.SubtopologyID, p)
			if id.AssignmentEpochs != nil && i < len(id.AssignmentEpochs) {
				s += fmt.Sprintf("@%d", id.AssignmentEpochs[i])
			}
			parts = append(parts, s)
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func fmtKmsgTasks(ids []kmsg.TaskIDs) string {
	var parts []string
	for _, id := range ids {
		for _, p := range id.Partitions {
			parts = append(parts, fmt.Sprintf("%s_%d", id.SubtopologyID, p))
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func fmtRecord(r records.Record) string {
	k := r.Key
	id := k.Group()
	switch kk := k.(type) {
	case records.StreamsGroupMemberMetadataKey:
		id += "/" + kk.MemberID
	case records.StreamsGroupTargetAssignmentMemberKey:
		id += "/" + kk.MemberID
	case records.StreamsGroupCurrentMemberAssignmentKey:
		id += "/" + kk.MemberID
	}
	name := strings.TrimPrefix(records.RecordTypeName(k.RecordType()), "StreamsGroup")
	if r.Value == nil {
		return fmt.Sprintf("- %s %s (tombstone)", name, id)
	}
	var body string
	switch v := r.Value.(type) {
	case records.StreamsGroupMetadataValue:
		body = fmt.Sprintf("epoch=%d validated-topology=%d configs=%v", v.Epoch, v.ValidatedTopologyEpoch, v.LastAssignmentConfigs)
	case records.StreamsGroupMemberMetadataValue:
		body = fmt.Sprintf("process=%s topology-epoch=%d rto=%d", v.ProcessID, v.TopologyEpoch, v.RebalanceTimeoutMs)
		if v.InstanceID != nil {
			body += " instance=" + *v.InstanceID
		}
		if v.RackID != nil {
			body += " rack=" + *v.RackID
		}
		if v.UserEndpoint != nil {
			body += fmt.Sprintf(" endpoint=%s:%d", v.UserEndpoint.Host, v.UserEndpoint.Port)
		}
	case records.StreamsGroupTargetAssignmentMetadataValue:
		body = fmt.Sprintf("assignment-epoch=%d ts=%d", v.AssignmentEpoch, v.AssignmentTimestamp)
	case records.StreamsGroupTargetAssignmentMemberValue:
		body = fmt.Sprintf("active=%s standby=%s warmup=%s", fmtTaskIDs(v.ActiveTasks), fmtTaskIDs(v.StandbyTasks), fmtTaskIDs(v.WarmupTasks))
	case records.StreamsGroupCurrentMemberAssignmentValue:
		body = fmt.Sprintf("epoch=%d prev=%d state=%s active=%s standby=%s warmup=%s",
			v.MemberEpoch, v.PreviousMemberEpoch, memberStateFromInt8(v.State), fmtTaskIDs(v.ActiveTasks), fmtTaskIDs(v.StandbyTasks), fmtTaskIDs(v.WarmupTasks))
		if len(v.ActiveTasksPendingRevocation)+len(v.StandbyTasksPendingRevocation)+len(v.WarmupTasksPendingRevocation) > 0 {
			body += fmt.Sprintf(" revoking active=%s standby=%s warmup=%s", fmtTaskIDs(v.ActiveTasksPendingRevocation),
				fmtTaskIDs(v.StandbyTasksPendingRevocation), fmtTaskIDs(v.WarmupTasksPendingRevocation))
		}
	case records.StreamsGroupTopologyValue:
		var subs []string
		for _, s := range v.Subtopologies {
			subs = append(subs, s.SubtopologyID)
		}
		body = fmt.Sprintf("epoch=%d subtopologies=%v", v.Epoch, subs)
	default:
		body = fmt.Sprintf("%+v", v)
	}
	return fmt.Sprintf("+ %s %s %s", name, id, body)
}

func errName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	if e := kerr.ErrorForCode(code); e != nil {
		return e.(*kerr.Error).Message
	}
	return fmt.Sprint(code)
}

var statusNames = []string{"STALE_TOPOLOGY", "MISSING_SOURCE_TOPICS", "INCORRECTLY_PARTITIONED_TOPICS",
	"MISSING_INTERNAL_TOPICS", "SHUTDOWN_APPLICATION", "ASSIGNMENT_DELAYED", "MISSING_CLIENT_TAGS"}

func fmtResponse(who string, msg kmsg.Response) string {
	switch r := msg.(type) {
	case *kmsg.StreamsGroupHeartbeatResponse:
		if r.ErrorCode != 0 {
			return fmt.Sprintf("%s: error=%s %q", who, errName(r.ErrorCode), deref(r.ErrorMessage))
		}
		s := fmt.Sprintf("%s: epoch=%d", who, r.MemberEpoch)
		if r.HeartbeatIntervalMillis != 0 {
			s += fmt.Sprintf(" interval=%d", r.HeartbeatIntervalMillis)
		}
		if r.ActiveTasks != nil {
			s += fmt.Sprintf(" active=%s standby=%s warmup=%s", fmtKmsgTasks(r.ActiveTasks), fmtKmsgTasks(r.StandbyTasks), fmtKmsgTasks(r.WarmupTasks))
		}
		for _, st := range r.Status {
			name := fmt.Sprint(st.StatusCode)
			if int(st.StatusCode) < len(statusNames) {
				name = statusNames[st.StatusCode]
			}
			s += fmt.Sprintf("\n    status %s: %s", name, st.StatusDetail)
		}
		if r.PartitionsByUserEndpoint != nil {
			s += fmt.Sprintf("\n    endpoint-epoch=%d", r.EndpointInformationEpoch)
			for _, e := range r.PartitionsByUserEndpoint {
				s += fmt.Sprintf("\n    endpoint %s:%d active=%v standby=%v", e.UserEndpoint.Host, e.UserEndpoint.Port,
					fmtTopicParts(e.ActivePartitions), fmtTopicParts2(e.StandbyPartitions))
			}
		}
		return s
	case *kmsg.DeleteGroupsResponse:
		var parts []string
		for _, g := range r.Groups {
			parts = append(parts, fmt.Sprintf("%s=%s", g.Group, errName(g.ErrorCode)))
		}
		return fmt.Sprintf("%s: delete %s", who, strings.Join(parts, " "))
	default:
		return fmt.Sprintf("%s: %T", who, msg)
	}
}

func fmtTopicParts(ps []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition) string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%s%v", p.Topic, p.Partitions))
	}
	return "[" + strings.Join(out, " ") + "]"
}

func fmtTopicParts2(ps []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition) string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%s%v", p.Topic, p.Partitions))
	}
	return "[" + strings.Join(out, " ") + "]"
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// fmtEffects renders records, events, timers, runs and topics of an Output.
func fmtEffects(o Output, showTimers bool) string {
	var b strings.Builder
	for _, r := range o.Records {
		fmt.Fprintf(&b, "%s\n", fmtRecord(r))
	}
	for _, e := range o.Events {
		fmt.Fprintf(&b, "event %s\n", e)
	}
	if showTimers {
		for _, t := range o.Timers {
			if t.Cancel {
				fmt.Fprintf(&b, "timer cancel %s\n", t.Key)
			} else {
				fmt.Fprintf(&b, "timer set %s @%d\n", t.Key, t.Deadline)
			}
		}
	}
	for _, r := range o.AssignorRuns {
		var ms []string
		for _, m := range r.Input.Members {
			ms = append(ms, m.MemberID)
		}
		probe := ""
		if r.Probe {
			probe = " (probe)"
		}
		fmt.Fprintf(&b, "assignor run %s epoch=%d assignor=%s members=%v subtopologies=%d%s\n", r.Group, r.Epoch, r.Assignor, ms, len(r.Input.Subtopologies), probe)
	}
	for _, c := range o.ProbeChecks {
		warm := 0
		for _, m := range c.Target {
			warm += len(m.Warmup)
		}
		fmt.Fprintf(&b, "probe check %s epoch=%d seq=%d reason=%s policy=%s target-warmups=%d\n", c.Group, c.Epoch, c.Seq, c.Reason, c.Policy, warm)
	}
	topics := append([]TopicToCreate(nil), o.TopicsToCreate...)
	sort.Slice(topics, func(i, j int) bool { return topics[i].Name < topics[j].Name })
	for i, t := range topics {
		if i > 0 && topics[i-1].Name == t.Name {
			continue
		}
		fmt.Fprintf(&b, "create topic %s partitions=%d rf=%d\n", t.Name, t.Partitions, t.ReplicationFactor)
	}
	return b.String()
}
