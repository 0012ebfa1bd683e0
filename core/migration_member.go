package core

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/coordhost/coordhost/core/records"
	"github.com/coordhost/coordhost/core/userdata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Classic members of a streams group (online migration, docs/MIGRATION.md).
// A classic Kafka Streams thread that joins — or was converted into — a
// streams group is a streamsMember whose classic field is set. The field is
// persisted as coordhost's tagged field 1000 of
// StreamsGroupMemberMetadataValue, modelled on Kafka's
// ConsumerGroupMemberMetadataValue tag 0 (ClassicMemberMetadata); its
// codec is in package records (records/migration.go).

// streamProtocolName is the classic protocol name of Kafka Streams.
const streamProtocolName = "stream"

// sessionTimeoutOf is a member's session timeout: its own JoinGroup value
// for a classic member, the group's otherwise.
func (c *Coordinator) sessionTimeoutOf(g *streamsGroup, member string) int32 {
	if m := g.members[member]; m != nil && m.classic != nil {
		return m.classic.SessionTimeoutMs
	}
	return c.streamsConfig(g.id).SessionTimeoutMs
}

// classicSubscription is a classic Streams member's decoded JoinGroup
// metadata: the ConsumerProtocol subscription and its SubscriptionInfo.
type classicSubscription struct {
	consumer *kmsg.ConsumerMemberMetadata
	info     *userdata.SubscriptionInfo
}

// decodeClassicSubscription decodes the "stream" protocol metadata.
func decodeClassicSubscription(meta []byte) (*classicSubscription, error) {
	if meta == nil {
		return nil, fmt.Errorf("no %q protocol", streamProtocolName)
	}
	cs, err := userdata.DecodeSubscription(meta)
	if err != nil {
		return nil, err
	}
	info, err := userdata.DecodeSubscriptionInfo(cs.UserData)
	if err != nil {
		return nil, err
	}
	return &classicSubscription{consumer: cs, info: info}, nil
}

// processIDString is the KIP-1071 form of a classic process id.
func processIDString(p userdata.ProcessID) string {
	const hex = "0123456789abcdef"
	var b []byte
	for i, x := range p {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, hex[x>>4], hex[x&15])
	}
	return string(b)
}

// parseEndpoint splits a classic "host:port" user endpoint; "" is none.
func parseEndpoint(s string) (*records.Endpoint, error) {
	if s == "" {
		return nil, nil
	}
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return nil, fmt.Errorf("user endpoint %q: missing port", s)
	}
	host, port := strings.TrimSuffix(strings.TrimPrefix(s[:i], "["), "]"), s[i+1:]
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("user endpoint %q: bad port", s)
	}
	return &records.Endpoint{Host: host, Port: uint16(n)}, nil
}

// classicTaskID maps a classic TaskID to the streams protocol's.
func classicTaskID(t userdata.TaskID) TaskID {
	return TaskID{Subtopology: t.SubtopologyID(), Partition: t.Partition}
}
