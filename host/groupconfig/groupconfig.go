// Package groupconfig answers the GROUP resources of Kafka's config
// requests — DescribeConfigs, IncrementalAlterConfigs, AlterConfigs and
// ListConfigResources — as Kafka 4.4's controller
// (ConfigurationControlManager, ControllerConfigurationValidator) and
// GroupConfig answer them: how an alter request reads, how a group's new
// runtime set is computed and refused, and how the answers are built.
//
// It holds no state: the host keeps each group's runtime set, checks a
// proposed set against the group's whole configuration, stages it with
// the round's records and routes a request to the node that owns the
// group.
package groupconfig

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/config"
)

// Op is one requested change of a GROUP resource.
type Op struct {
	Name  string
	Op    kmsg.IncrementalAlterConfigOp
	Value *string
}

// Resource is one GROUP resource of an alter request; Replace is set for
// the legacy AlterConfigs, whose set replaces the group's whole set.
type Resource struct {
	Group   string
	Ops     []Op
	Replace bool
}

// Result is a resource's answer (Code 0: applied or valid).
type Result struct {
	Code int16
	Msg  string
}

// InvalidRequest is the answer to a resource the request gets wrong.
func InvalidRequest(msg string) Result { return Result{kerr.InvalidRequest.Code, msg} }

// InvalidConfig is the answer to a resource whose values are refused.
func InvalidConfig(err error) Result { return Result{kerr.InvalidConfig.Code, err.Error()} }

// ParseAlter reads the resources of an IncrementalAlterConfigs or
// AlterConfigs request whose resources are all GROUP resources; any
// other body has none.
func ParseAlter(body kmsg.Request) (rs []Resource, validateOnly bool) {
	switch b := body.(type) {
	case *kmsg.IncrementalAlterConfigsRequest:
		for _, r := range b.Resources {
			ar := Resource{Group: r.ResourceName}
			for _, c := range r.Configs {
				ar.Ops = append(ar.Ops, Op{Name: c.Name, Op: c.Op, Value: c.Value})
			}
			rs = append(rs, ar)
		}
		return rs, b.ValidateOnly
	case *kmsg.AlterConfigsRequest:
		for _, r := range b.Resources {
			ar := Resource{Group: r.ResourceName, Replace: true}
			for _, c := range r.Configs {
				ar.Ops = append(ar.Ops, Op{Name: c.Name, Op: kmsg.IncrementalAlterConfigOpSet, Value: c.Value})
			}
			rs = append(rs, ar)
		}
		return rs, b.ValidateOnly
	}
	return nil, false
}

// Alter decides every resource with propose and, unless validateOnly,
// stages each accepted set; a group named twice in one request is
// refused in both places, as Kafka refuses it.
func Alter(rs []Resource, validateOnly bool, propose func(Resource) (map[string]string, Result), stage func(group string, next map[string]string)) []Result {
	out := make([]Result, len(rs))
	seen := map[string]int{}
	for _, r := range rs {
		seen[r.Group]++
	}
	for i, r := range rs {
		if seen[r.Group] > 1 {
			out[i] = InvalidRequest("Each resource must appear at most once.")
			continue
		}
		next, res := propose(r)
		if res.Code == 0 && !validateOnly {
			stage(r.Group, next)
		}
		out[i] = res
	}
	return out
}

// Group is what Propose needs to know of the group a resource names.
type Group struct {
	// Runtime is the group's runtime set now (nil: none).
	Runtime map[string]string
	// FileValue is a key's raw value in the config file's layers, the
	// start of an APPEND or SUBTRACT to a list key without a runtime
	// value (Kafka starts from the key's default; see docs/CONFIG.md).
	FileValue func(name string) string
	// Check validates the group's whole configuration with a proposed
	// runtime set.
	Check func(next map[string]string) error
}

// Propose computes and validates a resource's new runtime set: SET,
// DELETE, APPEND and SUBTRACT applied in order to the current set (to an
// empty one for AlterConfigs), every value parsed as its key's type, the
// result checked by g.Check.
func Propose(r Resource, g Group) (map[string]string, Result) {
	if r.Group == "" {
		return nil, InvalidRequest("Default group resources are not allowed.")
	}
	names := map[string]bool{}
	var nulls []string
	for _, o := range r.Ops {
		if names[o.Name] {
			return nil, InvalidRequest("Error due to duplicate config keys")
		}
		names[o.Name] = true
		if o.Value == nil && o.Op != kmsg.IncrementalAlterConfigOpDelete {
			nulls = append(nulls, o.Name)
		}
	}
	if len(nulls) > 0 {
		return nil, InvalidRequest("Null value not supported for : " + strings.Join(nulls, ", "))
	}
	next := map[string]string{}
	if !r.Replace {
		maps.Copy(next, g.Runtime)
	}
	for _, o := range r.Ops {
		switch o.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			next[o.Name] = *o.Value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(next, o.Name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if info, ok := config.GroupKey(o.Name); !ok || info.Type != "LIST" {
				return nil, InvalidConfig(fmt.Errorf("can't %s to key %s because its type is not LIST", opName(o.Op), o.Name))
			}
			raw, ok := next[o.Name]
			if !ok && g.FileValue != nil {
				raw = g.FileValue(o.Name)
			}
			next[o.Name] = editList(splitList(raw), o.Op, *o.Value)
		default:
			return nil, InvalidRequest(fmt.Sprintf("Unknown operation type %d for key %s", o.Op, o.Name))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(next)) {
		v, err := config.ParseDynamic(k, next[k])
		if err != nil {
			return nil, InvalidConfig(err)
		}
		next[k] = v
	}
	if g.Check != nil {
		if err := g.Check(next); err != nil {
			return nil, InvalidConfig(err)
		}
	}
	return next, Result{}
}

// editList applies APPEND (add the values not present yet) or SUBTRACT
// (remove every occurrence) of the comma-separated values to list.
func editList(list []string, op kmsg.IncrementalAlterConfigOp, values string) string {
	for _, v := range splitList(values) {
		if op == kmsg.IncrementalAlterConfigOpAppend {
			if !slices.Contains(list, v) {
				list = append(list, v)
			}
			continue
		}
		list = slices.DeleteFunc(list, func(x string) bool { return x == v })
	}
	return strings.Join(list, ",")
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func opName(op kmsg.IncrementalAlterConfigOp) string {
	if op == kmsg.IncrementalAlterConfigOpAppend {
		return "APPEND"
	}
	return "SUBTRACT"
}

// AlterResponse builds the answer to an alter request from its results,
// one per resource in request order.
func AlterResponse(body kmsg.Request, results []Result) kmsg.Response {
	msg := func(r Result) *string {
		if r.Code == 0 {
			return nil
		}
		return kmsg.StringPtr(r.Msg)
	}
	switch b := body.(type) {
	case *kmsg.IncrementalAlterConfigsRequest:
		resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
		resp.SetVersion(b.Version)
		for i, r := range b.Resources {
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
			rr.ErrorCode, rr.ErrorMessage = results[i].Code, msg(results[i])
			resp.Resources = append(resp.Resources, rr)
		}
		return resp
	case *kmsg.AlterConfigsRequest:
		resp := kmsg.NewPtrAlterConfigsResponse()
		resp.SetVersion(b.Version)
		for i, r := range b.Resources {
			rr := kmsg.NewAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
			rr.ErrorCode, rr.ErrorMessage = results[i].Code, msg(results[i])
			resp.Resources = append(resp.Resources, rr)
		}
		return resp
	}
	return nil
}

// Describe answers one GROUP resource of a DescribeConfigs request from
// the group's effective settings (runtime values included) and its file
// layers' settings (file), the synonyms of a runtime value.
func Describe(body *kmsg.DescribeConfigsRequest, r kmsg.DescribeConfigsRequestResource, effective, file []config.Setting) kmsg.DescribeConfigsResponseResource {
	rr := kmsg.NewDescribeConfigsResponseResource()
	rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
	if r.ResourceName == "" {
		rr.ErrorCode, rr.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr("Group name must not be empty")
		return rr
	}
	static := make(map[string]config.Setting, len(file))
	for _, s := range file {
		static[s.Key] = s
	}
	for _, s := range effective {
		if len(r.ConfigNames) > 0 && !slices.Contains(r.ConfigNames, s.Key) {
			continue
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value = s.Key, kmsg.StringPtr(config.FormatValue(s.Value))
		c.Source = configSource(s.Source)
		c.IsDefault = c.Source == kmsg.ConfigSourceDefaultConfig
		if info, ok := config.GroupKey(s.Key); ok {
			c.ConfigType = configType(info.Type)
			if body.IncludeDocumentation {
				c.Documentation = kmsg.StringPtr(info.Doc)
			}
		}
		if body.IncludeSynonyms {
			c.ConfigSynonyms = append(c.ConfigSynonyms, synonym(s))
			if st, ok := static[s.Key]; ok && s.Source == config.DynamicSource {
				c.ConfigSynonyms = append(c.ConfigSynonyms, synonym(st))
			}
		}
		rr.Configs = append(rr.Configs, c)
	}
	return rr
}

func synonym(s config.Setting) kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	y := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
	y.Name, y.Value, y.Source = s.Key, kmsg.StringPtr(config.FormatValue(s.Value)), configSource(s.Source)
	return y
}

// ListResources answers ListConfigResources for GROUP: groups as GROUP
// config resources, in name order, each once. It sorts groups.
func ListResources(groups []string) *kmsg.ListConfigResourcesResponse {
	resp := kmsg.NewPtrListConfigResourcesResponse()
	slices.Sort(groups)
	for _, g := range slices.Compact(groups) {
		r := kmsg.NewListConfigResourcesResponseConfigResource()
		r.Name, r.Type = g, int8(kmsg.ConfigResourceTypeGroupConfig)
		resp.ConfigResources = append(resp.ConfigResources, r)
	}
	return resp
}

// OwnerMoving reports whether an answer from another node says that node
// no longer, or not yet, answers for the group's partition.
func OwnerMoving(resp kmsg.Response) bool {
	moving := func(code int16) bool {
		return code == kerr.NotCoordinator.Code || code == kerr.CoordinatorLoadInProgress.Code || code == kerr.CoordinatorNotAvailable.Code
	}
	switch r := resp.(type) {
	case *kmsg.DescribeConfigsResponse:
		return slices.ContainsFunc(r.Resources, func(x kmsg.DescribeConfigsResponseResource) bool { return moving(x.ErrorCode) })
	case *kmsg.IncrementalAlterConfigsResponse:
		return slices.ContainsFunc(r.Resources, func(x kmsg.IncrementalAlterConfigsResponseResource) bool { return moving(x.ErrorCode) })
	case *kmsg.AlterConfigsResponse:
		return slices.ContainsFunc(r.Resources, func(x kmsg.AlterConfigsResponseResource) bool { return moving(x.ErrorCode) })
	}
	return false
}

// configSource maps a setting's source to Kafka's: runtime values are
// GROUP_CONFIG (Java's DYNAMIC_GROUP_CONFIG), built-in defaults
// DEFAULT_CONFIG, and the config file's values STATIC_BROKER_CONFIG.
func configSource(src string) kmsg.ConfigSource {
	switch src {
	case config.DynamicSource:
		return kmsg.ConfigSourceGroupConfig
	case "default":
		return kmsg.ConfigSourceDefaultConfig
	}
	return kmsg.ConfigSourceStaticBrokerConfig
}

func configType(t string) kmsg.ConfigType {
	switch t {
	case "INT":
		return kmsg.ConfigTypeInt
	case "LONG":
		return kmsg.ConfigTypeLong
	case "LIST":
		return kmsg.ConfigTypeList
	case "BOOLEAN":
		return kmsg.ConfigTypeBoolean
	}
	return kmsg.ConfigTypeString
}
