package userdata

import (
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The describe functions render a decoded value in exactly the text form
// interop/userdata-golden's Golden.describe prints for Java's decoded
// objects, so that "our decoder and Java's decoder read the same thing" is a
// string comparison. Sets and maps are sorted by their printed form in Java
// String order; duplicates collapse as in Java's HashSet/HashMap.

func describe(kind string, b []byte) (string, error) {
	switch kind {
	case "sub":
		s, err := DecodeSubscriptionInfo(b)
		if err != nil {
			return "", err
		}
		return describeSubscriptionInfo(s), nil
	case "asg":
		a, err := DecodeAssignmentInfo(b)
		if err != nil {
			return "", err
		}
		return describeAssignmentInfo(a), nil
	case "cps":
		m, err := DecodeSubscription(b)
		if err != nil {
			return "", err
		}
		return describeSubscription(m), nil
	case "cpa":
		a, err := DecodeAssignment(b)
		if err != nil {
			return "", err
		}
		return describeAssignment(a), nil
	}
	return "", fmt.Errorf("unknown kind %q", kind)
}

func describeSubscriptionInfo(s *SubscriptionInfo) string {
	sums := map[string]string{}
	var prev, standby []string
	for t, sum := range s.OffsetSums() {
		sums[esc(t.String())] = strconv.FormatInt(sum, 10)
		if sum == LatestOffset {
			prev = append(prev, esc(t.String()))
		} else {
			standby = append(standby, esc(t.String()))
		}
	}
	tags := map[string]string{}
	for _, tag := range s.ClientTags {
		tags[esc(tag.Key)] = esc(tag.Value)
	}
	endpoint := "null"
	if s.UserEndPoint != "" {
		endpoint = esc(s.UserEndPoint)
	}
	return fmt.Sprintf("v=%d latest=%d pid=%s endpoint=%s sums=%s prev=%s standby=%s unique=%d error=%d tags=%s",
		s.Version, s.LatestSupportedVersion, s.ProcessID, endpoint, javaMap(sums), javaSet(prev), javaSet(standby),
		s.UniqueField, s.ErrorCode, javaMap(tags))
}

func describeAssignmentInfo(a *AssignmentInfo) string {
	active := make([]string, len(a.ActiveTasks))
	for i, t := range a.ActiveTasks {
		active[i] = esc(t.String())
	}
	standby := map[string]string{}
	for _, s := range a.StandbyTasks {
		standby[esc(s.Task.String())] = partitionSet(s.Partitions)
	}
	return fmt.Sprintf("v=%d common=%d active=[%s] standby=%s hosts=%s shosts=%s err=%d next=%d",
		a.Version, a.CommonlySupportedVersion, strings.Join(active, ", "), javaMap(standby),
		hostMap(a.PartitionsByHost), hostMap(a.StandbyPartitionsByHost), a.ErrorCode, a.NextRebalanceMs)
}

func hostMap(hosts []HostPartitions) string {
	m := map[string]string{}
	for _, h := range hosts {
		m[esc(h.Host)+"/"+strconv.Itoa(int(h.Port))] = partitionSet(h.Partitions)
	}
	return javaMap(m)
}

func partitionSet(tps []TopicPartition) string {
	var out []string
	for _, tp := range tps {
		out = append(out, esc(tp.Topic)+"@"+strconv.Itoa(int(tp.Partition)))
	}
	return javaSet(out)
}

func describeSubscription(m *kmsg.ConsumerMemberMetadata) string {
	topics := make([]string, len(m.Topics))
	for i, t := range m.Topics {
		topics[i] = esc(t)
	}
	owned := make([]string, len(m.OwnedPartitions))
	for i, o := range m.OwnedPartitions {
		owned[i] = esc(o.Topic) + "@" + intList(o.Partitions)
	}
	rack := "null"
	if m.Rack != nil {
		rack = esc(*m.Rack)
	}
	return fmt.Sprintf("v=%d topics=[%s] userdata=%s owned=[%s] gen=%d rack=%s", m.Version,
		strings.Join(topics, ", "), userDataHex(m.UserData), strings.Join(owned, ", "), m.Generation, rack)
}

func describeAssignment(a *kmsg.ConsumerMemberAssignment) string {
	parts := make([]string, len(a.Topics))
	for i, t := range a.Topics {
		parts[i] = esc(t.Topic) + "@" + intList(t.Partitions)
	}
	return fmt.Sprintf("v=%d partitions=[%s] userdata=%s", a.Version, strings.Join(parts, ", "), userDataHex(a.UserData))
}

func intList(ps []int32) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.Itoa(int(p))
	}
	return "[" + strings.Join(s, ", ") + "]"
}

func userDataHex(b []byte) string {
	if b == nil {
		return "null"
	}
	return "[" + hex.EncodeToString(b) + "]"
}

// javaSet prints a de-duplicated, Java-String-sorted set as
// AbstractCollection.toString does.
func javaSet(items []string) string {
	items = slices.Clone(items)
	slices.SortFunc(items, javaCompare)
	return "[" + strings.Join(slices.Compact(items), ", ") + "]"
}

// javaMap prints a map sorted by key as TreeMap.toString does.
func javaMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, javaCompare)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// esc is Golden.esc: %XX for '%', ',', '=', brackets, braces, whitespace
// and control bytes of the UTF-8 form.
func esc(s string) string {
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= 0x20 || c == 0x7f || strings.IndexByte("%,=[]{}", c) >= 0 {
			fmt.Fprintf(&sb, "%%%02X", c)
		} else {
			sb.WriteByte(c)
		}
	}
	return sb.String()
}

// unesc is Golden.unesc: undoes %XX escapes of a case-file value.
func unesc(s string) string {
	var out []byte
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if b, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				out = append(out, byte(b))
				i += 2
				continue
			}
		}
		out = append(out, s[i])
	}
	return string(out)
}
