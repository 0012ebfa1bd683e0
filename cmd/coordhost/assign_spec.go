package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/coordhost/coordhost/abi"
)

// assignSpec is the input file of `coordhost assign` (docs/PLUGINS.md,
// "Running one assignment"): one streams group as the host would hand it
// to an assignor. Tasks are named "<subtopology>_<partition>".
type assignSpec struct {
	GroupID    string `json:"group_id"`
	GroupEpoch int32  `json:"group_epoch"`
	Seed       uint64 `json:"seed"`
	// Nil: coordhost's defaults (0 standbys, 2 warm-ups, lag 10000,
	// probing every 600000 ms).
	NumStandbyReplicas      *int32            `json:"num_standby_replicas"`
	NumWarmupReplicas       *int32            `json:"num_warmup_replicas"`
	AcceptableRecoveryLag   *int64            `json:"acceptable_recovery_lag"`
	ProbingIntervalMs       *int64            `json:"probing_interval_ms"`
	RackAwareAssignmentTags []string          `json:"rack_aware_assignment_tags"`
	Configs                 map[string]string `json:"configs"`
	Subtopologies           []specSubtopology `json:"subtopologies"`
	Members                 []specMember      `json:"members"`
}

type specSubtopology struct {
	ID         string `json:"id"`
	Partitions int32  `json:"partitions"`
	Stateful   bool   `json:"stateful"`
}

type specMember struct {
	MemberID       string            `json:"member_id"`
	InstanceID     string            `json:"instance_id"`
	Process        string            `json:"process"`
	Rack           string            `json:"rack"`
	ClientTags     map[string]string `json:"client_tags"`
	Active         []string          `json:"active"`
	Standby        []string          `json:"standby"`
	Warmup         []string          `json:"warmup"`
	TaskOffsets    map[string]int64  `json:"task_offsets"`
	TaskEndOffsets map[string]int64  `json:"task_end_offsets"`
}

// The config keys the host puts in every request (host/assign/abi.go), set
// from the spec's typed fields.
const (
	keyAcceptableLag = "acceptable.recovery.lag"
	keyStandbys      = "num.standby.replicas"
	keyWarmups       = "num.warmup.replicas"
	keyProbing       = "probing.rebalance.interval.ms"
)

// decodeSpec parses an assign spec and builds the request the host would
// send. Errors name the file (name), the field and the value.
func decodeSpec(name string, data []byte) (*abi.AssignRequest, error) {
	var s assignSpec
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: %s", name, jsonError(data, err))
	}
	end := dec.InputOffset()
	if rest := bytes.TrimLeft(data[end:], " \t\r\n"); len(rest) > 0 {
		return nil, fmt.Errorf("%s: %s: data after the spec object", name, position(data, int64(len(data)-len(rest))))
	}
	req, err := s.request()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if _, err := abi.AppendAssignRequest(nil, req); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return req, nil
}

// jsonError says where in data a decode error is.
func jsonError(data []byte, err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("%s: %v", position(data, syn.Offset-1), err)
	case errors.As(err, &typ):
		return fmt.Sprintf("%s: field %s: %s is not a valid %s", position(data, typ.Offset-1), typ.Field, typ.Value, typ.Type)
	case errors.Is(err, io.EOF):
		return "empty file, want a JSON object"
	}
	return err.Error()
}

// position renders the place of the byte at offset off as line:column.
func position(data []byte, off int64) string {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := off - int64(bytes.LastIndexByte(before, '\n'))
	return fmt.Sprintf("line %d column %d", line, col)
}

func (s *assignSpec) request() (*abi.AssignRequest, error) {
	if s.GroupEpoch < 0 {
		return nil, fmt.Errorf("group_epoch: %d must be >= 0", s.GroupEpoch)
	}
	req := &abi.AssignRequest{GroupID: s.GroupID, GroupEpoch: s.GroupEpoch, Seed: s.Seed}
	if err := s.configs(&req.Configs); err != nil {
		return nil, err
	}
	if err := s.subtopologies(req); err != nil {
		return nil, err
	}
	names := taskNames(req.Subtopologies)
	procs := map[string]int32{}
	for _, m := range s.Members {
		procs[m.Process] = 0
	}
	for p := range procs {
		req.Processes = append(req.Processes, p)
	}
	sort.Strings(req.Processes)
	for i, p := range req.Processes {
		procs[p] = int32(i)
	}
	ids := map[string]bool{}
	for i := range s.Members {
		m, err := s.Members[i].member(names, procs)
		if err != nil {
			return nil, fmt.Errorf("members[%d]: %w", i, err)
		}
		if ids[m.ID] {
			return nil, fmt.Errorf("members[%d]: member_id %q appears twice", i, m.ID)
		}
		ids[m.ID] = true
		req.Members = append(req.Members, m)
	}
	// The host sorts members by id (abi/SPEC.md 5.1).
	sort.SliceStable(req.Members, func(i, j int) bool { return req.Members[i].ID < req.Members[j].ID })
	return req, nil
}

func (s *assignSpec) configs(c *abi.Configs) error {
	standbys, warmups := int32(0), int32(2)
	lag, probing := int64(10000), int64(600000)
	for _, f := range []struct {
		name string
		v    *int32
		dst  *int32
	}{{"num_standby_replicas", s.NumStandbyReplicas, &standbys}, {"num_warmup_replicas", s.NumWarmupReplicas, &warmups}} {
		if f.v != nil {
			if *f.v < 0 {
				return fmt.Errorf("%s: %d must be >= 0", f.name, *f.v)
			}
			*f.dst = *f.v
		}
	}
	if s.AcceptableRecoveryLag != nil {
		if lag = *s.AcceptableRecoveryLag; lag < 0 {
			return fmt.Errorf("acceptable_recovery_lag: %d must be >= 0", lag)
		}
	}
	if s.ProbingIntervalMs != nil {
		if probing = *s.ProbingIntervalMs; probing <= 0 {
			return fmt.Errorf("probing_interval_ms: %d must be > 0", probing)
		}
	}
	*c = abi.Configs{NumStandbyReplicas: standbys, NumWarmupReplicas: warmups, AcceptableRecoveryLag: lag,
		RackAwareAssignmentTags: s.RackAwareAssignmentTags}
	all := map[string]string{
		keyAcceptableLag: strconv.FormatInt(lag, 10), keyStandbys: strconv.Itoa(int(standbys)),
		keyWarmups: strconv.Itoa(int(warmups)), keyProbing: strconv.FormatInt(probing, 10),
	}
	for k, v := range s.Configs {
		if _, ok := all[k]; ok {
			return fmt.Errorf("configs: key %q is set by its own field (num_standby_replicas, num_warmup_replicas, acceptable_recovery_lag, probing_interval_ms)", k)
		}
		all[k] = v
	}
	c.All = sortedPairs(all)
	return nil
}

func sortedPairs(m map[string]string) []abi.KV {
	if len(m) == 0 {
		return nil
	}
	out := make([]abi.KV, 0, len(m))
	for k, v := range m {
		out = append(out, abi.KV{Key: k, Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

func (s *assignSpec) subtopologies(req *abi.AssignRequest) error {
	var total int64
	seen := map[string]bool{}
	for i, st := range s.Subtopologies {
		switch {
		case st.ID == "":
			return fmt.Errorf("subtopologies[%d]: id is empty", i)
		case seen[st.ID]:
			return fmt.Errorf("subtopologies[%d]: id %q appears twice", i, st.ID)
		case st.Partitions < 0:
			return fmt.Errorf("subtopologies[%d] (%q): partitions %d must be >= 0", i, st.ID, st.Partitions)
		}
		seen[st.ID] = true
		if total += int64(st.Partitions); total > abi.MaxTasks {
			return fmt.Errorf("subtopologies: %d tasks exceed the limit %d", total, abi.MaxTasks)
		}
		req.Subtopologies = append(req.Subtopologies, abi.Subtopology{ID: st.ID, Partitions: st.Partitions, Stateful: st.Stateful})
	}
	// The host lists subtopologies in ascending id order (SPEC.md 4.1).
	sort.Slice(req.Subtopologies, func(i, j int) bool { return req.Subtopologies[i].ID < req.Subtopologies[j].ID })
	return nil
}

// taskIndex resolves task names to dense task indices.
type taskIndex struct {
	base map[string]int32 // subtopology id -> first task index
	subs []abi.Subtopology
	idx  map[string]int
}

func taskNames(subs []abi.Subtopology) taskIndex {
	ti := taskIndex{base: map[string]int32{}, subs: subs, idx: map[string]int{}}
	space := abi.NewTaskSpace(subs)
	for i, s := range subs {
		ti.base[s.ID] = space.Base(int32(i))
		ti.idx[s.ID] = i
	}
	return ti
}

// task parses "<subtopology>_<partition>".
func (ti taskIndex) task(name string) (int32, error) {
	cut := strings.LastIndexByte(name, '_')
	if cut < 0 {
		return 0, fmt.Errorf("task %q: want <subtopology>_<partition>, e.g. \"0_3\"", name)
	}
	sub, part := name[:cut], name[cut+1:]
	i, ok := ti.idx[sub]
	if !ok {
		return 0, fmt.Errorf("task %q: no subtopology %q", name, sub)
	}
	p, err := strconv.ParseInt(part, 10, 32)
	if err != nil || p < 0 || int32(p) >= ti.subs[i].Partitions {
		return 0, fmt.Errorf("task %q: partition %q not in [0, %d) of subtopology %q", name, part, ti.subs[i].Partitions, sub)
	}
	return ti.base[sub] + int32(p), nil
}

func (ti taskIndex) set(field string, names []string) ([]int32, error) {
	out := make([]int32, 0, len(names))
	for i, n := range names {
		t, err := ti.task(n)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", field, i, err)
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	for i := 1; i < len(out); i++ {
		if out[i] == out[i-1] {
			return nil, fmt.Errorf("%s: a task appears twice", field)
		}
	}
	return out, nil
}

func (ti taskIndex) offsets(field string, m map[string]int64) ([]abi.TaskOffset, error) {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names) // the first bad name is the same on every run
	out := make([]abi.TaskOffset, 0, len(m))
	for _, n := range names {
		t, err := ti.task(n)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		out = append(out, abi.TaskOffset{Task: t, Offset: m[n]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Task < out[j].Task })
	for i := 1; i < len(out); i++ {
		if out[i].Task == out[i-1].Task {
			return nil, fmt.Errorf("%s: two names for one task (e.g. \"0_1\" and \"0_01\")", field)
		}
	}
	return out, nil
}

func (sm *specMember) member(ti taskIndex, procs map[string]int32) (abi.Member, error) {
	m := abi.Member{ID: sm.MemberID, InstanceID: sm.InstanceID, Rack: sm.Rack, ClientTags: sortedPairs(sm.ClientTags)}
	switch {
	case sm.MemberID == "":
		return m, errors.New("member_id is empty")
	case sm.Process == "":
		return m, fmt.Errorf("member %q: process is empty", sm.MemberID)
	}
	m.Process = procs[sm.Process]
	var err error
	sets := []struct {
		field string
		names []string
		dst   *[]int32
	}{{"active", sm.Active, &m.Active}, {"standby", sm.Standby, &m.Standby}, {"warmup", sm.Warmup, &m.Warmup}}
	for _, s := range sets {
		if *s.dst, err = ti.set(s.field, s.names); err != nil {
			return m, fmt.Errorf("member %q: %w", sm.MemberID, err)
		}
	}
	if m.TaskOffsets, err = ti.offsets("task_offsets", sm.TaskOffsets); err != nil {
		return m, fmt.Errorf("member %q: %w", sm.MemberID, err)
	}
	if m.TaskEndOffsets, err = ti.offsets("task_end_offsets", sm.TaskEndOffsets); err != nil {
		return m, fmt.Errorf("member %q: %w", sm.MemberID, err)
	}
	return m, nil
}

// taskName is the inverse of taskIndex.task.
func taskName(space abi.TaskSpace, subs []abi.Subtopology, t int32) string {
	s, p := space.Locate(t)
	return subs[s].ID + "_" + strconv.Itoa(int(p))
}
