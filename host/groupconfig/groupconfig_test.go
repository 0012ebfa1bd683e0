package groupconfig

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/config"
)

// listKey is a LIST group key a runtime config may set.
func listKey(t *testing.T) string {
	t.Helper()
	for _, k := range config.GroupKeys() {
		if k.Type == "LIST" {
			if _, err := config.ParseDynamic(k.Name, ""); err == nil {
				return k.Name
			}
		}
	}
	t.Fatal("no runtime LIST group key")
	return ""
}

func set(name, v string) Op { return Op{Name: name, Op: kmsg.IncrementalAlterConfigOpSet, Value: &v} }

func TestPropose(t *testing.T) {
	const session = "streams.session.timeout.ms"
	list := listKey(t)
	str := func(s string) *string { return &s }
	cur := map[string]string{session: "45000", "streams.heartbeat.interval.ms": "5000"}
	for _, tc := range []struct {
		name    string
		r       Resource
		file    string
		check   error
		want    map[string]string
		code    int16
		msgPart string
	}{
		{name: "set keeps the other runtime values", r: Resource{Group: "g", Ops: []Op{set(session, "50000")}},
			want: map[string]string{session: "50000", "streams.heartbeat.interval.ms": "5000"}},
		{name: "AlterConfigs replaces the whole set", r: Resource{Group: "g", Replace: true, Ops: []Op{set(session, "50000")}},
			want: map[string]string{session: "50000"}},
		{name: "delete", r: Resource{Group: "g", Ops: []Op{{Name: session, Op: kmsg.IncrementalAlterConfigOpDelete}}},
			want: map[string]string{"streams.heartbeat.interval.ms": "5000"}},
		{name: "append starts from the file's value", file: "a, b",
			r:    Resource{Group: "g", Ops: []Op{{Name: list, Op: kmsg.IncrementalAlterConfigOpAppend, Value: str("b,c")}}},
			want: map[string]string{session: "45000", "streams.heartbeat.interval.ms": "5000", list: "a,b,c"}},
		{name: "subtract removes every occurrence", file: "a,b,a",
			r:    Resource{Group: "g", Ops: []Op{{Name: list, Op: kmsg.IncrementalAlterConfigOpSubtract, Value: str("a")}}},
			want: map[string]string{session: "45000", "streams.heartbeat.interval.ms": "5000", list: "b"}},
		{name: "append to a non-list key", r: Resource{Group: "g", Ops: []Op{{Name: session, Op: kmsg.IncrementalAlterConfigOpAppend, Value: str("1")}}},
			code: kerr.InvalidConfig.Code, msgPart: "because its type is not LIST"},
		{name: "default group", r: Resource{Ops: []Op{set(session, "50000")}},
			code: kerr.InvalidRequest.Code, msgPart: "Default group resources are not allowed."},
		{name: "duplicate keys", r: Resource{Group: "g", Ops: []Op{set(session, "50000"), set(session, "60000")}},
			code: kerr.InvalidRequest.Code, msgPart: "duplicate config keys"},
		{name: "null values named", r: Resource{Group: "g", Ops: []Op{{Name: session, Op: kmsg.IncrementalAlterConfigOpSet}}},
			code: kerr.InvalidRequest.Code, msgPart: "Null value not supported for : " + session},
		{name: "unknown op", r: Resource{Group: "g", Ops: []Op{{Name: session, Op: 9, Value: str("1")}}},
			code: kerr.InvalidRequest.Code, msgPart: "Unknown operation type 9"},
		{name: "unparsable value", r: Resource{Group: "g", Ops: []Op{set(session, "soon")}},
			code: kerr.InvalidConfig.Code, msgPart: session},
		{name: "the whole configuration refused", r: Resource{Group: "g", Ops: []Op{set(session, "50000")}},
			check: errors.New("heartbeat interval must be below the session timeout"),
			code:  kerr.InvalidConfig.Code, msgPart: "below the session timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, res := Propose(tc.r, Group{Runtime: cur,
				FileValue: func(string) string { return tc.file },
				Check:     func(map[string]string) error { return tc.check }})
			if res.Code != tc.code || (tc.msgPart != "" && !strings.Contains(res.Msg, tc.msgPart)) {
				t.Fatalf("result %+v, want code %d with %q", res, tc.code, tc.msgPart)
			}
			if tc.code != 0 {
				if next != nil {
					t.Fatalf("a refused resource proposed %v", next)
				}
				return
			}
			if len(next) != len(tc.want) {
				t.Fatalf("next %v, want %v", next, tc.want)
			}
			for k, v := range tc.want {
				if next[k] != v {
					t.Fatalf("next %v, want %v", next, tc.want)
				}
			}
		})
	}
	if cur[session] != "45000" || len(cur) != 2 {
		t.Fatalf("Propose changed the current set: %v", cur)
	}
}

// TestAlter: a group named twice is refused in both places and never
// proposed; validateOnly stages nothing; the answer keeps request order.
func TestAlter(t *testing.T) {
	body := kmsg.NewPtrIncrementalAlterConfigsRequest()
	for _, g := range []string{"a", "b", "a", "c"} {
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, g
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = "streams.session.timeout.ms", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("50000")
		r.Configs = append(r.Configs, c)
		body.Resources = append(body.Resources, r)
	}
	for _, validateOnly := range []bool{false, true} {
		body.ValidateOnly = validateOnly
		rs, vo := ParseAlter(body)
		if vo != validateOnly || len(rs) != 4 || rs[1].Group != "b" || rs[1].Replace || *rs[1].Ops[0].Value != "50000" {
			t.Fatalf("parsed %+v (validateOnly %v)", rs, vo)
		}
		var proposed, staged []string
		results := Alter(rs, vo, func(r Resource) (map[string]string, Result) {
			proposed = append(proposed, r.Group)
			if r.Group == "c" {
				return nil, InvalidConfig(errors.New("no"))
			}
			return map[string]string{"k": "v"}, Result{}
		}, func(g string, _ map[string]string) { staged = append(staged, g) })
		resp := AlterResponse(body, results).(*kmsg.IncrementalAlterConfigsResponse)
		codes := []int16{}
		for _, r := range resp.Resources {
			codes = append(codes, r.ErrorCode)
		}
		want := []int16{kerr.InvalidRequest.Code, 0, kerr.InvalidRequest.Code, kerr.InvalidConfig.Code}
		if len(codes) != 4 || codes[0] != want[0] || codes[1] != want[1] || codes[2] != want[2] || codes[3] != want[3] {
			t.Fatalf("codes %v, want %v", codes, want)
		}
		if resp.Resources[1].ErrorMessage != nil || *resp.Resources[0].ErrorMessage != "Each resource must appear at most once." {
			t.Fatalf("messages %v / %v", resp.Resources[1].ErrorMessage, *resp.Resources[0].ErrorMessage)
		}
		if len(proposed) != 2 || (validateOnly && len(staged) != 0) || (!validateOnly && (len(staged) != 1 || staged[0] != "b")) {
			t.Fatalf("validateOnly %v: proposed %v, staged %v", validateOnly, proposed, staged)
		}
	}
}

// TestDescribe: a runtime value is GROUP_CONFIG with the file's value as
// its synonym; a filter by name; the empty group is refused.
func TestDescribe(t *testing.T) {
	const k = "streams.session.timeout.ms"
	body := kmsg.NewPtrDescribeConfigsRequest()
	body.IncludeSynonyms, body.IncludeDocumentation = true, true
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "g"
	effective := []config.Setting{{Key: k, Value: int64(50000), Source: config.DynamicSource},
		{Key: "streams.heartbeat.interval.ms", Value: int64(5000), Source: "default"}}
	file := []config.Setting{{Key: k, Value: int64(45000), Source: "file"}}
	rr := Describe(body, r, effective, file)
	if rr.ErrorCode != 0 || len(rr.Configs) != 2 {
		t.Fatalf("described %+v", rr)
	}
	c := rr.Configs[0]
	if c.Source != kmsg.ConfigSourceGroupConfig || c.IsDefault || *c.Value != "50000" || c.ConfigType != kmsg.ConfigTypeInt || c.Documentation == nil {
		t.Fatalf("runtime value described as %+v", c)
	}
	if len(c.ConfigSynonyms) != 2 || *c.ConfigSynonyms[1].Value != "45000" || c.ConfigSynonyms[1].Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Fatalf("synonyms %+v", c.ConfigSynonyms)
	}
	if d := rr.Configs[1]; !d.IsDefault || d.Source != kmsg.ConfigSourceDefaultConfig || len(d.ConfigSynonyms) != 1 {
		t.Fatalf("default described as %+v", d)
	}
	r.ConfigNames = []string{k}
	if rr := Describe(body, r, effective, file); len(rr.Configs) != 1 || rr.Configs[0].Name != k {
		t.Fatalf("filtered by name: %+v", rr.Configs)
	}
	r.ResourceName = ""
	if rr := Describe(body, r, effective, file); rr.ErrorCode != kerr.InvalidRequest.Code || len(rr.Configs) != 0 {
		t.Fatalf("empty group: %+v", rr)
	}
}

func TestListResourcesAndOwnerMoving(t *testing.T) {
	resp := ListResources([]string{"b", "a", "b"})
	if len(resp.ConfigResources) != 2 || resp.ConfigResources[0].Name != "a" || resp.ConfigResources[1].Name != "b" ||
		resp.ConfigResources[0].Type != int8(kmsg.ConfigResourceTypeGroupConfig) {
		t.Fatalf("listed %+v", resp.ConfigResources)
	}
	d := kmsg.NewPtrDescribeConfigsResponse()
	d.Resources = []kmsg.DescribeConfigsResponseResource{{ErrorCode: 0}, {ErrorCode: kerr.CoordinatorLoadInProgress.Code}}
	a := kmsg.NewPtrAlterConfigsResponse()
	a.Resources = []kmsg.AlterConfigsResponseResource{{ErrorCode: kerr.InvalidConfig.Code}}
	if !OwnerMoving(d) || OwnerMoving(a) || OwnerMoving(kmsg.NewPtrListGroupsResponse()) {
		t.Fatal("OwnerMoving: loading must mean moving; an invalid config or another response must not")
	}
}
