package userdata

import (
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestTaskIDForms(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want TaskID
	}{
		{"0_0", TaskID{}},
		{"12_345", TaskID{Subtopology: 12, Partition: 345}},
		{"topo__3_1", TaskID{Subtopology: 3, Partition: 1, Topology: "topo"}},
	} {
		got, err := ParseTaskID(tc.s)
		if err != nil || got != tc.want || got.String() != tc.s {
			t.Errorf("ParseTaskID(%q) = %+v, %v; String() = %q", tc.s, got, err, got.String())
		}
	}
	for _, bad := range []string{"", "1", "a_1", "1_b", "__1_2", "1_2_3", "99999999999_0"} {
		if _, err := ParseTaskID(bad); err == nil {
			t.Errorf("ParseTaskID(%q) accepted", bad)
		}
	}
}

func TestTaskIDSubtopologyMapping(t *testing.T) {
	task := TaskID{Subtopology: 7, Partition: 3}
	if got := task.SubtopologyID(); got != "7" {
		t.Fatalf("SubtopologyID = %q, want \"7\"", got)
	}
	back, err := TaskIDFromSubtopology("7", 3)
	if err != nil || back != task {
		t.Fatalf("TaskIDFromSubtopology(\"7\", 3) = %+v, %v", back, err)
	}
	// KIP-1071 ids are free strings; only canonical int32 decimals map back.
	for _, id := range []string{"", "07", "+7", "-0", "x", "2147483648", "sub-1"} {
		if _, err := TaskIDFromSubtopology(id, 0); err == nil {
			t.Errorf("TaskIDFromSubtopology(%q) accepted", id)
		}
	}
	if _, err := TaskIDFromSubtopology("1", -1); err == nil {
		t.Error("negative partition accepted")
	}
}

func TestTaskIDCompareAndHash(t *testing.T) {
	ids := []TaskID{{1, 0, ""}, {0, 2, ""}, {0, 1, ""}, {10, 0, ""}}
	slices.SortFunc(ids, TaskID.Compare)
	if want := []TaskID{{0, 1, ""}, {0, 2, ""}, {1, 0, ""}, {10, 0, ""}}; !slices.Equal(ids, want) {
		t.Fatalf("sorted = %v", ids)
	}
	// Objects.hash(0, 0, null) = 31*(31*(31*1+0)+0)+0 = 29791; with "a": + 97.
	if h := (TaskID{}).javaHashCode(); h != 29791 {
		t.Errorf("hash(0_0) = %d, want 29791", h)
	}
	if h := (TaskID{Topology: "a"}).javaHashCode(); h != 29791+97 {
		t.Errorf("hash(a__0_0) = %d, want %d", h, 29791+97)
	}
}

func TestTaskPartitionsUsesRealPartitionCounts(t *testing.T) {
	counts := map[string]int32{"big": 4, "small": 2}
	sources := []string{"big", "small"}
	n, err := TaskCount(sources, counts)
	if err != nil || n != 4 {
		t.Fatalf("TaskCount = %d, %v; want 4", n, err)
	}
	got, err := TaskPartitions(TaskID{Subtopology: 0, Partition: 1}, sources, counts)
	if want := []TopicPartition{{"big", 1}, {"small", 1}}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("task 0_1 = %v, %v; want %v", got, err, want)
	}
	// Task 0_3 only reads "big": "small" has no partition 3.
	got, err = TaskPartitions(TaskID{Subtopology: 0, Partition: 3}, sources, counts)
	if want := []TopicPartition{{"big", 3}}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("task 0_3 = %v, %v; want %v", got, err, want)
	}
	if _, err := TaskPartitions(TaskID{}, []string{"unknown"}, counts); err == nil {
		t.Fatal("unknown topic accepted")
	}
}

func TestActiveTaskListAlignsTasksWithSortedPartitions(t *testing.T) {
	parts, active, err := ActiveTaskList(map[TaskID][]TopicPartition{
		{Subtopology: 1, Partition: 0}: {{"b", 0}, {"a-repartition", 0}},
		{Subtopology: 0, Partition: 0}: {{"a", 0}},
		{Subtopology: 0, Partition: 1}: {{"a", 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	wantParts := []TopicPartition{{"a", 0}, {"a", 1}, {"a-repartition", 0}, {"b", 0}}
	wantActive := []TaskID{{0, 0, ""}, {0, 1, ""}, {1, 0, ""}, {1, 0, ""}}
	if !slices.Equal(parts, wantParts) || !slices.Equal(active, wantActive) {
		t.Fatalf("got %v / %v\nwant %v / %v", parts, active, wantParts, wantActive)
	}
	_, _, err = ActiveTaskList(map[TaskID][]TopicPartition{{0, 0, ""}: {{"a", 0}}, {1, 0, ""}: {{"a", 0}}})
	if err == nil || !strings.Contains(err.Error(), "0_0") || !strings.Contains(err.Error(), "1_0") {
		t.Fatalf("shared partition: err = %v", err)
	}
}

func TestSortPartitionsUsesJavaStringOrder(t *testing.T) {
	// U+FF5E sorts after U+1F600 in UTF-8 byte order but before it in
	// UTF-16 (the surrogate 0xD83D < 0xFF5E), which is Java's order.
	tps := []TopicPartition{{"\uFF5E", 0}, {"\U0001F600", 0}, {"a", 2}, {"a", 1}}
	SortPartitions(tps)
	want := []TopicPartition{{"a", 1}, {"a", 2}, {"\U0001F600", 0}, {"\uFF5E", 0}}
	if !slices.Equal(tps, want) {
		t.Fatalf("sorted = %q", tps)
	}
}

func TestProcessIDOrderIsSigned(t *testing.T) {
	low, _ := ParseProcessID("80000000-0000-0000-0000-000000000000") // MSB negative
	high, _ := ParseProcessID("7fffffff-ffff-ffff-0000-000000000000")
	if low.Compare(high) >= 0 || high.Compare(low) <= 0 || low.Compare(low) != 0 {
		t.Fatal("ProcessID.Compare is not java.util.UUID.compareTo (signed)")
	}
	if got := low.String(); got != "80000000-0000-0000-0000-000000000000" {
		t.Fatalf("String = %q", got)
	}
	for _, bad := range []string{"", "80000000000000000000000000000000", "8000000-00000-0000-0000-000000000000", "g0000000-0000-0000-0000-000000000000"} {
		if _, err := ParseProcessID(bad); err == nil {
			t.Errorf("ParseProcessID(%q) accepted", bad)
		}
	}
}

func TestEncodeRefusesWhatTheVersionCannotCarry(t *testing.T) {
	named := TaskID{Topology: "t"}
	for name, encode := range map[string]func() ([]byte, error){
		"subscription v12":           (&SubscriptionInfo{Version: 12, LatestSupportedVersion: 12}).Encode,
		"subscription v0":            (&SubscriptionInfo{Version: 0, LatestSupportedVersion: 11}).Encode,
		"subscription latest<ver":    (&SubscriptionInfo{Version: 9, LatestSupportedVersion: 8}).Encode,
		"subscription named v9":      (&SubscriptionInfo{Version: 9, LatestSupportedVersion: 11, TaskOffsetSums: []TaskOffsetSum{{Task: named}}}).Encode,
		"subscription duplicate":     (&SubscriptionInfo{Version: 11, LatestSupportedVersion: 11, TaskOffsetSums: []TaskOffsetSum{{}, {}}}).Encode,
		"subscription long topology": (&SubscriptionInfo{Version: 11, LatestSupportedVersion: 11, TaskOffsetSums: []TaskOffsetSum{{Task: TaskID{Topology: strings.Repeat("x", 1<<15)}}}}).Encode,
		"assignment v0":              (&AssignmentInfo{Version: 0}).Encode,
		"assignment v12":             (&AssignmentInfo{Version: 12}).Encode,
		"assignment named v9":        (&AssignmentInfo{Version: 9, ActiveTasks: []TaskID{named}}).Encode,
		"assignment long host":       (&AssignmentInfo{Version: 2, PartitionsByHost: []HostPartitions{{Host: strings.Repeat("h", 65536)}}}).Encode,
		"assignment invalid UTF-8":   (&AssignmentInfo{Version: 6, PartitionsByHost: []HostPartitions{{Host: "h", Partitions: []TopicPartition{{Topic: "\xff"}}}}}).Encode,
	} {
		if _, err := encode(); !errors.Is(err, ErrUnencodable) {
			t.Errorf("%s: err = %v, want ErrUnencodable", name, err)
		}
	}
	// At the limits: a 65535-byte host and a NUL (2 bytes in modified UTF-8).
	b, err := (&AssignmentInfo{Version: 2, PartitionsByHost: []HostPartitions{{Host: strings.Repeat("h", 65533) + "\x00"}}}).Encode()
	if err == nil {
		_, err = DecodeAssignmentInfo(b)
	}
	if err != nil {
		t.Fatalf("65535-byte host: %v", err)
	}
}

func TestFutureSubscriptionInfo(t *testing.T) {
	s, err := DecodeSubscriptionInfo([]byte{0, 0, 0, 12, 0, 0, 0, 12, 0xde, 0xad})
	if err != nil || !s.IsFuture() || s.Version != 12 || s.LatestSupportedVersion != 12 {
		t.Fatalf("future subscription = %+v, %v", s, err)
	}
}

func TestConsumerProtocolVersions(t *testing.T) {
	m := kmsg.NewConsumerMemberMetadata()
	m.Version = 7
	m.Topics = []string{"b", "a"}
	b, err := EncodeSubscription(&m)
	if err != nil || b[0] != 0 || b[1] != 3 {
		t.Fatalf("v7 subscription encoded as %x, %v; want version 3", b, err)
	}
	if m.Version != 7 || m.Topics[0] != "b" {
		t.Fatal("EncodeSubscription modified its argument")
	}
	m.Version = -1
	if _, err := EncodeSubscription(&m); !errors.Is(err, ErrUnencodable) {
		t.Fatalf("negative version: %v", err)
	}
	a := kmsg.NewConsumerMemberAssignment()
	a.Version = 4
	a.UserData = []byte{}
	b, err = EncodeAssignment(&a)
	if err != nil || len(b) != 10 || b[1] != 3 {
		t.Fatalf("v4 assignment encoded as %x, %v", b, err)
	}
	got, err := DecodeAssignment(b)
	if err != nil || got.UserData == nil || len(got.UserData) != 0 {
		t.Fatalf("empty (not null) user data decoded as %#v, %v", got, err)
	}
}

func TestAssignmentTopicsGroupsInFirstSeenOrder(t *testing.T) {
	got := AssignmentTopics([]TopicPartition{{"b", 1}, {"a", 0}, {"b", 0}})
	if len(got) != 2 || got[0].Topic != "b" || !slices.Equal(got[0].Partitions, []int32{1, 0}) || got[1].Topic != "a" {
		t.Fatalf("AssignmentTopics = %+v", got)
	}
}

func TestJavaCompareMatchesUTF16Order(t *testing.T) {
	words := []string{"", "a", "ab", "b", "\u00e9", "\u07ff", "\ue000", "\uff5e", "\U0001F600", "a\U0001F600", "a\uffff", "\x00"}
	for _, x := range words {
		for _, y := range words {
			ux, uy := utf16Units(x), utf16Units(y)
			want := slices.Compare(ux, uy)
			if got := javaCompare(x, y); (got < 0) != (want < 0) || (got == 0) != (want == 0) {
				t.Errorf("javaCompare(%q, %q) = %d, UTF-16 order says %d", x, y, got, want)
			}
		}
	}
}

// Distinct strings never tie, also when their invalid bytes decode to the
// same U+FFFD: a sort of a member's client tags (describeSubscriptionInfo)
// or of its topics then gives one order whatever the order they came in.
func TestJavaCompareIsTotalOnInvalidUTF8(t *testing.T) {
	a, b := "k\xee", "k\xf0"
	if javaCompare(a, b) == 0 || javaCompare(a, b) > 0 == (javaCompare(b, a) > 0) {
		t.Fatalf("javaCompare(%q, %q) = %d, reversed %d: want a strict order", a, b, javaCompare(a, b), javaCompare(b, a))
	}
	s1 := &SubscriptionInfo{Version: 11, ClientTags: []ClientTag{{Key: a, Value: "z1"}, {Key: b, Value: ""}}}
	s2 := &SubscriptionInfo{Version: 11, ClientTags: []ClientTag{{Key: b, Value: ""}, {Key: a, Value: "z1"}}}
	for range 20 { // map iteration order varies between calls
		if d1, d2 := describeSubscriptionInfo(s1), describeSubscriptionInfo(s2); d1 != d2 {
			t.Fatalf("the same tags in another order describe differently:\n %s\n %s", d1, d2)
		}
	}
}

// TestKmsgAloneIsTooLenient shows why DecodeSubscription and
// DecodeAssignment check the bytes before handing them to kmsg: kmsg reads a
// negative version and a null (-1) array, which Java's ConsumerProtocol
// rejects (TestGoldenJava confirms the rejection with Java itself).
func TestKmsgAloneIsTooLenient(t *testing.T) {
	for _, name := range []string{"cps negative version", "cps null topics", "cpa null partitions"} {
		i := slices.IndexFunc(edgeCases, func(c edgeCase) bool { return c.name == name })
		b, _ := hex.DecodeString(edgeCases[i].hex)
		var kerr, ours error
		if edgeCases[i].kind == "cps" {
			var m kmsg.ConsumerMemberMetadata
			kerr = m.ReadFrom(b)
			_, ours = DecodeSubscription(b)
		} else {
			var a kmsg.ConsumerMemberAssignment
			kerr = a.ReadFrom(b)
			_, ours = DecodeAssignment(b)
		}
		if kerr != nil || !errors.Is(ours, ErrMalformed) {
			t.Errorf("%s: kmsg err %v, ours %v; want kmsg to accept and us to reject", name, kerr, ours)
		}
	}
}
