package userdata

import (
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The golden cases (testdata/userdata/cases.txt) are read here exactly as
// interop/userdata-golden's Golden.generate reads them, to build the same
// logical values on the Go side.

const (
	casesFile  = "../../testdata/userdata/cases.txt"
	goldenFile = "../../testdata/userdata/golden.txt"
	javaDir    = "../../interop/userdata-golden"
	javaMain   = "coordhost.userdata.Golden"
)

// goldenCase is one expanded case: a kind (sub, asg, cps, cpa), a version
// and the case line's fields.
type goldenCase struct {
	name    string // "<case>/v<version>"
	kind    string
	version int
	kv      map[string]string
}

func readCases(t testing.TB) []goldenCase {
	t.Helper()
	raw, err := os.ReadFile(casesFile)
	if err != nil {
		t.Fatal(err)
	}
	var out []goldenCase
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		tok := strings.Fields(line)
		kv := map[string]string{}
		for _, f := range tok[2:] {
			k, v, _ := strings.Cut(f, "=")
			kv[k] = v
		}
		lo, hi, _ := strings.Cut(kv["versions"], "-")
		from, _ := strconv.Atoi(lo)
		to, _ := strconv.Atoi(hi)
		for v := from; v <= to; v++ {
			out = append(out, goldenCase{name: fmt.Sprintf("%s/v%d", tok[1], v), kind: tok[0], version: v, kv: kv})
		}
	}
	return out
}

// encode builds the case's value in Go and encodes it with our encoder.
func (c goldenCase) encode() ([]byte, error) {
	switch c.kind {
	case "sub":
		s, err := c.subscriptionInfo()
		if err != nil {
			return nil, err
		}
		return s.Encode()
	case "asg":
		a, err := c.assignmentInfo()
		if err != nil {
			return nil, err
		}
		return a.Encode()
	case "cps":
		m := kmsg.NewConsumerMemberMetadata()
		m.Version = int16(c.version)
		m.Topics = list(c.kv["topics"])
		for i := range m.Topics {
			m.Topics[i] = unesc(m.Topics[i])
		}
		m.UserData = userData(c.kv["userdata"])
		for _, tp := range partitions(c.kv["owned"]) { // one entry each, unsorted: EncodeSubscription sorts and groups
			m.OwnedPartitions = append(m.OwnedPartitions, kmsg.ConsumerMemberMetadataOwnedPartition{Topic: tp.Topic, Partitions: []int32{tp.Partition}})
		}
		gen, _ := strconv.Atoi(c.kv["gen"])
		m.Generation = int32(gen)
		if r := c.kv["rack"]; r != "-" {
			r = unesc(r)
			m.Rack = &r
		}
		return EncodeSubscription(&m)
	case "cpa":
		a := kmsg.NewConsumerMemberAssignment()
		a.Version = int16(c.version)
		a.Topics = AssignmentTopics(partitions(c.kv["partitions"]))
		a.UserData = userData(c.kv["userdata"])
		return EncodeAssignment(&a)
	}
	return nil, fmt.Errorf("unknown kind %q", c.kind)
}

func (c goldenCase) subscriptionInfo() (*SubscriptionInfo, error) {
	s := &SubscriptionInfo{Version: int32(c.version), LatestSupportedVersion: UnknownVersion}
	if c.version > 2 {
		s.LatestSupportedVersion = atoi32(c.kv["latest"])
	}
	pid, err := ParseProcessID(c.kv["pid"])
	if err != nil {
		return nil, err
	}
	s.ProcessID = pid
	if e := c.kv["endpoint"]; e != "-" {
		s.UserEndPoint = unesc(e)
	}
	for _, e := range list(c.kv["sums"]) {
		k, v, _ := strings.Cut(e, "=")
		task, err := ParseTaskID(unesc(k))
		if err != nil {
			return nil, err
		}
		sum, _ := strconv.ParseInt(v, 10, 64)
		s.TaskOffsetSums = append(s.TaskOffsetSums, TaskOffsetSum{Task: task, OffsetSum: sum})
	}
	// Java builds a TreeMap<TaskId, Long>, so its encoder sees the tasks sorted.
	slices.SortFunc(s.TaskOffsetSums, func(a, b TaskOffsetSum) int { return a.Task.Compare(b.Task) })
	u, _ := strconv.ParseInt(c.kv["unique"], 10, 8)
	s.UniqueField = int8(u)
	s.ErrorCode = atoi32(c.kv["error"])
	for _, e := range list(c.kv["tags"]) {
		k, v, _ := strings.Cut(e, "=")
		s.ClientTags = append(s.ClientTags, ClientTag{Key: unesc(k), Value: unesc(v)})
	}
	return s, nil
}

func (c goldenCase) assignmentInfo() (*AssignmentInfo, error) {
	a := &AssignmentInfo{Version: int32(c.version), CommonlySupportedVersion: atoi32(c.kv["common"]),
		ErrorCode: atoi32(c.kv["err"]), NextRebalanceMs: NoRebalance}
	for _, s := range list(c.kv["active"]) {
		t, err := ParseTaskID(unesc(s))
		if err != nil {
			return nil, err
		}
		a.ActiveTasks = append(a.ActiveTasks, t)
	}
	for _, e := range semis(c.kv["standby"]) {
		k, v, _ := strings.Cut(e, "=")
		t, err := ParseTaskID(unesc(k))
		if err != nil {
			return nil, err
		}
		a.StandbyTasks = append(a.StandbyTasks, StandbyTask{Task: t, Partitions: partitions(strings.ReplaceAll(v, "+", ","))})
	}
	a.PartitionsByHost = hosts(c.kv["hosts"])
	a.StandbyPartitionsByHost = hosts(c.kv["shosts"])
	if n := c.kv["next"]; n != "" && n != "max" {
		a.NextRebalanceMs, _ = strconv.ParseInt(n, 10, 64)
	}
	return a, nil
}

func hosts(s string) []HostPartitions {
	var out []HostPartitions
	for _, e := range semis(s) {
		k, v, _ := strings.Cut(e, "=")
		slash := strings.LastIndexByte(k, '/')
		out = append(out, HostPartitions{Host: unesc(k[:slash]), Port: atoi32(k[slash+1:]),
			Partitions: partitions(strings.ReplaceAll(v, "+", ","))})
	}
	return out
}

func partitions(s string) []TopicPartition {
	var out []TopicPartition
	for _, tp := range list(s) {
		at := strings.LastIndexByte(tp, '@')
		out = append(out, TopicPartition{Topic: unesc(tp[:at]), Partition: atoi32(tp[at+1:])})
	}
	return out
}

func list(s string) []string {
	if s == "" || s == "-" {
		return nil
	}
	return strings.Split(s, ",")
}

func semis(s string) []string {
	if s == "" || s == "-" {
		return nil
	}
	return strings.Split(s, ";")
}

func userData(s string) []byte {
	if s == "-" {
		return nil
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err) // a broken cases.txt is a test bug
	}
	return append([]byte{}, b...)
}

func atoi32(s string) int32 {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return math.MinInt32
	}
	return int32(n)
}

// goldenVector is one line of golden.txt: what Java encoded for a case and
// how Java's decoder described those bytes.
type goldenVector struct {
	name, kind string
	bytes      []byte
	javaDesc   string
}

func parseGolden(t testing.TB, text string) []goldenVector {
	t.Helper()
	var out []goldenVector
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			t.Fatalf("golden line %q: want 4 tab-separated fields", line)
		}
		b, err := hex.DecodeString(f[2])
		if err != nil {
			t.Fatalf("golden line %q: %v", line, err)
		}
		out = append(out, goldenVector{name: f[0], kind: f[1], bytes: b, javaDesc: f[3]})
	}
	return out
}

func readGolden(t testing.TB) []goldenVector {
	t.Helper()
	raw, err := os.ReadFile(goldenFile)
	if err != nil {
		t.Fatal(err)
	}
	return parseGolden(t, string(raw))
}
