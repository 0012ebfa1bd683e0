package userdata

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// edgeCase is a hand-built input at the edge of a format. TestEdgeCases
// checks our decoders; TestGoldenJava sends the same inputs to Kafka's
// decoders and requires the outcome named by want:
//
//	accept  both decode it, to the same description
//	reject  both refuse it
//	differ  Java decodes it, we refuse it on purpose (docs/USERDATA.md)
type edgeCase struct {
	name, kind, hex, want string
}

// h joins hex fragments, ignoring spaces and '|' used for readability.
func h(parts ...string) string {
	return strings.NewReplacer(" ", "", "|", "").Replace(strings.Join(parts, ""))
}

const (
	uuid      = "00000000000000010000000000000002"
	topicA    = "0006746f70696341" // string "topicA"
	userdata8 = "000000080000000b0000000b"
)

var edgeCases = []edgeCase{
	// ConsumerProtocol subscription: kmsg alone would accept the null arrays.
	{"cps negative version", "cps", h("ffff", "00000000", "ffffffff"), "reject"},
	{"cps null topics", "cps", h("0000", "ffffffff", "ffffffff"), "reject"},
	{"cps null topic string", "cps", h("0000", "00000001", "ffff", "ffffffff"), "reject"},
	{"cps null owned partitions", "cps", h("0001", "00000001", topicA, userdata8, "ffffffff"), "reject"},
	{"cps null owned partition list", "cps", h("0001", "00000000", "ffffffff", "00000001", topicA, "ffffffff"), "reject"},
	{"cps topics count beyond data", "cps", h("0000", "00000003", topicA, "ffffffff"), "reject"},
	{"cps future version read as v3", "cps", h("0009", "00000001", topicA, userdata8, "00000000", "00000007", "ffff", "deadbeef"), "accept"},
	{"cps v0 trailing bytes", "cps", h("0000", "00000000", "ffffffff", "00"), "accept"},
	{"cps empty rack", "cps", h("0003", "00000000", "ffffffff", "00000000", "ffffffff", "0000"), "accept"},
	{"cps null user data", "cps", h("0003", "00000000", "ffffffff", "00000000", "00000001", "0002", "7231"), "accept"},
	{"cps only a version", "cps", h("0003"), "reject"},
	{"cps one byte", "cps", h("00"), "reject"},
	// ConsumerProtocol assignment.
	{"cpa negative version", "cpa", h("fffe", "00000000", "ffffffff"), "reject"},
	{"cpa null partitions", "cpa", h("0000", "ffffffff", "ffffffff"), "reject"},
	{"cpa null partition list", "cpa", h("0000", "00000001", topicA, "ffffffff", "ffffffff"), "reject"},
	{"cpa future version with trailing fields", "cpa", h("0007", "00000001", topicA, "00000001", "00000002", userdata8, "0102"), "accept"},
	{"cpa missing user data", "cpa", h("0003", "00000000"), "reject"},
	// SubscriptionInfo.
	{"sub future version reads two ints", "sub", h("0000000c", "0000000d", "ffffffffffff"), "accept"},
	{"sub future version truncated", "sub", h("0000000c"), "reject"},
	{"sub version 0", "sub", h("00000000", "0000000b", uuid), "reject"},
	{"sub negative version", "sub", h("ffffffff", "0000000b", uuid), "reject"},
	{"sub latest below version", "sub", h("00000004", "00000003", uuid, "00000000", "00000000", "00000000"), "reject"},
	{"sub v3 unknown latest", "sub", h("00000003", "ffffffff", uuid, "00000000", "00000000", "00000000"), "reject"},
	{"sub v5 null prev tasks", "sub", h("00000005", "0000000b", uuid, "ffffffff", "00000000", "00000000"), "reject"},
	{"sub v7 null offset sums", "sub", h("00000007", "0000000b", uuid, "00000000", "ffffffff"), "reject"},
	{"sub v7 null partition sums", "sub", h("00000007", "0000000b", uuid, "00000000", "00000001", "00000000", "ffffffff"), "reject"},
	{"sub v2 null endpoint", "sub", h("00000002", uuid, "00000000", "00000000", "ffffffff"), "reject"},
	{"sub v10 named topology length -2 reads as null", "sub", h("0000000a", "0000000b", uuid, "00000000", "00000001", "00000000", "00000001", "fffffffffffffffe", "fffe", "00", "00000000"), "accept"},
	{"sub v11 null client tags", "sub", h("0000000b", "0000000b", uuid, "00000000", "00000000", "00", "00000000", "ffffffff"), "reject"},
	{"sub v11 null client tag value", "sub", h("0000000b", "0000000b", uuid, "00000000", "00000000", "00", "00000000", "00000001", "00000001", "61", "ffffffff"), "reject"},
	{"sub v11 trailing bytes", "sub", h("0000000b", "0000000b", uuid, "00000000", "00000000", "00", "00000000", "00000000", "ffff"), "accept"},
	{"sub v11 offset sum count beyond data", "sub", h("0000000b", "0000000b", uuid, "00000000", "7fffffff", "00"), "reject"},
	// AssignmentInfo.
	{"asg version 0", "asg", h("00000000", "00000000", "00000000"), "reject"},
	{"asg version 12", "asg", h("0000000c", "0000000c", "00000000", "00000000"), "reject"},
	{"asg v1 trailing bytes", "asg", h("00000001", "00000000", "00000000", "abcdef"), "accept"},
	{"asg v4 active count above length/8", "asg", h("00000004", "00000004", "00000006", "00000000", "00000000", "00000000", "00000000", "00000000", "00000000", "00000000"), "reject"},
	{"asg v4 negative standby count", "asg", h("00000004", "00000004", "00000000", "ffffffff", "00000000", "00000000"), "reject"},
	{"asg v2 NUL as C0 80 in host", "asg", h("00000002", "00000000", "00000000", "00000001", "0003", "68c080", "00000009", "00000000"), "accept"},
	{"asg v2 invalid modified UTF-8", "asg", h("00000002", "00000000", "00000000", "00000001", "0002", "68ff", "00000009", "00000000"), "reject"},
	{"asg v2 truncated multi-byte char", "asg", h("00000002", "00000000", "00000000", "00000001", "0002", "68c3", "00000009", "00000000"), "reject"},
	{"asg v6 dictionary in any order", "asg", h("00000006", "00000006", "00000000", "00000000",
		"00000002", "00000007", "0001", "62", "fffffffe", "0001", "61",
		"00000001", "0001", "68", "00000001", "00000002", "fffffffe", "00000000", "00000007", "00000003",
		"00000000", "00000000"), "accept"},
	{"asg v6 duplicate dictionary index, last wins", "asg", h("00000006", "00000006", "00000000", "00000000",
		"00000002", "00000001", "0001", "62", "00000001", "0001", "61",
		"00000001", "0001", "68", "00000001", "00000001", "00000001", "00000000", "00000000", "00000000"), "accept"},
	{"asg v11 error assignment", "asg", h("0000000b", "0000000b", "00000000", "00000000", "00000000", "00000000", "00000000", "00000004", "7fffffffffffffff"), "accept"},
	// Deliberate differences: Java builds a TopicPartition with a null topic,
	// a TaskId from a negative char count, and keeps unpaired surrogates.
	{"asg v5 topic index missing from dictionary", "asg", h("00000005", "00000005", "00000000", "00000000",
		"00000000", "00000001", "0001", "68", "00000001", "00000001", "00000003", "00000000", "00000000"), "differ"},
	{"asg v10 negative named topology length", "asg", h("0000000a", "0000000a", "00000001", "00000000", "00000000", "ffffffff",
		"00000000", "00000000", "00000000", "00000000", "00000000", "7fffffffffffffff"), "differ"},
	{"asg v4 unpaired surrogate in topic", "asg", h("00000004", "00000004", "00000000", "00000001", "00000000", "00000000",
		"00000001", "0003", "eda080", "00000000", "00000000", "00000000"), "differ"},
}

func TestEdgeCases(t *testing.T) {
	for _, c := range edgeCases {
		b, err := hex.DecodeString(c.hex)
		if err != nil {
			t.Fatalf("%s: bad hex: %v", c.name, err)
		}
		desc, err := describe(c.kind, b)
		switch {
		case c.want == "accept" && err != nil:
			t.Errorf("%s: rejected: %v", c.name, err)
		case c.want != "accept" && err == nil:
			t.Errorf("%s: accepted as %s", c.name, desc)
		case err != nil && !errors.Is(err, ErrMalformed):
			t.Errorf("%s: error does not wrap ErrMalformed: %v", c.name, err)
		case err != nil && testing.Verbose():
			t.Logf("%s: %v", c.name, err)
		}
	}
}
