package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// TestModule is the real check: coordhost's own packages obey the rules.
func TestModule(t *testing.T) {
	m, err := Load("../..")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Graph) < 5 {
		t.Fatalf("loaded only %d packages; is the walk broken?", len(m.Graph))
	}
	for _, v := range m.Check() {
		t.Error(v)
	}
}

const mod = "example.com/m"

// TestGraphViolations proves every import rule can fail, naming the import.
func TestGraphViolations(t *testing.T) {
	g := Graph{
		"core":                         {"fmt", "net", mod + "/host", kmsg},
		"core/records":                 {"os/exec", "sync/atomic", "unsafe", "hash/maphash", kerr, "github.com/other/lib", "fmt", mod + "/core", mod + "/host", mod + "/core/userdata", mod + "/core/records/x"},
		"abi":                          {"encoding/binary", mod + "/core", "github.com/other/lib"},
		"abi/guest":                    {mod + "/abi", "unsafe"},
		"abi/metrics":                  {mod + "/abi", "time", "os", mod + "/abi/guest", mod + "/abi/abitest"},
		"host/plugin":                  {mod + "/abi", wazero + "/api", mod + "/core", "github.com/other/lib", mod + "/internal/testtool"},
		"host/plugin/plugintest":       {mod + "/abi", mod + "/internal/testtool"},
		"host":                         {mod + "/core", mod + "/host/loop", mod + "/plugins/assignor-sticky", mod + "/plugins/assignor-sticky/wasm", mod + "/cmd/coordhost", "go.etcd.io/bbolt"},
		"host/store":                   {mod + "/core", "go.etcd.io/bbolt"},
		"host/loop":                    {"sync", kmsg, kerr, mod + "/core", mod + "/core/records", mod + "/host/assign", mod + "/host/runtime", mod + "/host/loop/x", mod + "/host", mod + "/abi", mod + "/plugins/assignor-sticky", wazero, mod + "/internal/testtool", "github.com/other/lib"},
		"host/admin":                   {mod + "/host/assign", mod + "/host/loop"},
		"host/runtime":                 {"sync", kmsg, mod + "/core", mod + "/host/store"},
		"host/authz":                   {mod + "/host/wire", kmsg, kerr, "log/slog", mod + "/core", mod + "/host/gateway", mod + "/host"},
		"host/assign":                  {"context", kmsg, mod + "/core", mod + "/abi", mod + "/host/plugin", mod + "/host/shadowproc", mod + "/plugins/assignor-ha", mod + "/plugins/assignor-sticky/wasm", mod + "/host", mod + "/host/gateway", "github.com/other/lib"},
		"host/offsets":                 {mod + "/host/wire", kmsg, kerr, "sync", mod + "/core", mod + "/host/gateway", mod + "/host", "github.com/other/lib"},
		"host/experiment":              {"sync", mod + "/core", mod + "/abi/metrics", mod + "/host/assign", mod + "/host/shadowproc", mod + "/host/config", mod + "/host/admin", mod + "/host", mod + "/host/store", mod + "/host/gateway", kmsg, "github.com/other/lib"},
		"host/groupconfig":             {kmsg, kerr, "maps", mod + "/host/config", mod + "/core", mod + "/host", mod + "/host/store"},
		"host/identity":                {kmsg, kerr, "github.com/twmb/franz-go/pkg/sasl/scram", mod + "/host/gateway", mod + "/host/authz", mod + "/host/offsets", mod + "/host/wire", mod + "/host/config", mod + "/core", mod + "/host", mod + "/host/store", "github.com/other/lib"},
		"plugins/assignor-sticky":      {mod + "/abi", mod + "/abi/guest", mod + "/core", "sort"},
		"plugins/assignor-sticky/wasm": {mod + "/abi", mod + "/abi/guest", mod + "/plugins/assignor-sticky", mod + "/plugins/assignor-ha", mod + "/host"},
		"cmd/coordhost":                {mod + "/host", mod + "/plugins/assignor-sticky/wasm", "anything.example/x"},
		"stray":                        {"fmt"},
		"":                             {"context", mod + "/host", mod + "/host/config", mod + "/abi", mod + "/core", mod + "/cmd/coordhost", "github.com/other/lib"},
	}
	want := map[string][]string{
		"core":                         {`"net"`, `"example.com/m/host"`},
		"core/records":                 {`"os/exec"`, `"sync/atomic"`, `"unsafe"`, `"hash/maphash"`, `"github.com/twmb/franz-go/pkg/kerr"`, `"github.com/other/lib"`, `"example.com/m/core"`, `"example.com/m/host"`, `"example.com/m/core/userdata"`},
		"abi":                          {`"example.com/m/core"`, `"github.com/other/lib"`},
		"abi/metrics":                  {`"os"`, `"example.com/m/abi/guest"`, `"example.com/m/abi/abitest"`},
		"host/plugin":                  {`"example.com/m/core"`, `"github.com/other/lib"`, `"example.com/m/internal/testtool"`},
		"host/plugin/plugintest":       nil,
		"host":                         {`"example.com/m/plugins/assignor-sticky/wasm"`, `"example.com/m/cmd/coordhost"`},
		"host/loop":                    {`"example.com/m/host"`, `"example.com/m/abi"`, `"example.com/m/plugins/assignor-sticky"`, `"github.com/tetratelabs/wazero"`, `"example.com/m/internal/testtool"`, `"github.com/other/lib"`},
		"host/admin":                   {`"example.com/m/host/loop"`},
		"host/runtime":                 {`"github.com/twmb/franz-go/pkg/kmsg"`, `"example.com/m/core"`, `"example.com/m/host/store"`},
		"host/authz":                   {`"example.com/m/core"`, `"example.com/m/host/gateway"`, `"example.com/m/host"`},
		"host/assign":                  {`"github.com/twmb/franz-go/pkg/kmsg"`, `"example.com/m/plugins/assignor-sticky/wasm"`, `"example.com/m/host"`, `"example.com/m/host/gateway"`, `"github.com/other/lib"`},
		"host/offsets":                 {`"example.com/m/core"`, `"example.com/m/host/gateway"`, `"example.com/m/host"`, `"github.com/other/lib"`},
		"host/experiment":              {`"example.com/m/host"`, `"example.com/m/host/store"`, `"example.com/m/host/gateway"`, `"github.com/twmb/franz-go/pkg/kmsg"`, `"github.com/other/lib"`},
		"host/groupconfig":             {`"example.com/m/core"`, `"example.com/m/host"`, `"example.com/m/host/store"`},
		"host/identity":                {`"example.com/m/core"`, `"example.com/m/host"`, `"example.com/m/host/store"`, `"github.com/other/lib"`},
		"plugins/assignor-sticky":      {`"example.com/m/abi/guest"`, `"example.com/m/core"`},
		"plugins/assignor-sticky/wasm": {`"example.com/m/plugins/assignor-ha"`, `"example.com/m/host"`},
		"stray":                        {`"fmt"`},
		"":                             {`"example.com/m/core"`, `"example.com/m/cmd/coordhost"`, `"github.com/other/lib"`},
	}
	got := map[string][]string{}
	for _, v := range CheckGraph(mod, g) {
		got[v.Pkg] = append(got[v.Pkg], strings.TrimPrefix(v.What, "imports "))
	}
	for pkg, imps := range want {
		if strings.Join(got[pkg], " ") != strings.Join(imps, " ") {
			t.Errorf("%s: violations %v, want %v", pkg, got[pkg], imps)
		}
	}
	for pkg := range got {
		if _, ok := want[pkg]; !ok {
			t.Errorf("%s: unexpected violations %v", pkg, got[pkg])
		}
	}
}

const badCore = `package core

import (
	"math/rand"
	r2 "math/rand/v2"
	"time"
	clock "time"
	_ "hash/maphash"
)

func f() {
	go func() {}()
	_ = time.Now()
	time.Sleep(1)
	<-clock.After(1)
	_ = rand.Intn(3)
	_ = r2.IntN(3)
	_ = rand.New(rand.NewSource(1)).Intn(3) // seeded: allowed
	_ = time.Duration(5) * time.Millisecond // arithmetic: allowed
}
`

// TestCoreSourceViolations proves every purity rule on core's source can fail,
// naming the offending call or statement.
func TestCoreSourceViolations(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "bad.go", badCore, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range CheckCoreFile("core", fset, f) {
		got = append(got, v.Pos+" "+v.What)
	}
	want := []string{
		`bad.go:8 imports "hash/maphash"`,
		"bad.go:12 go statement",
		"bad.go:13 time.Now",
		"bad.go:14 time.Sleep",
		"bad.go:15 time.After",
		"bad.go:16 rand.Intn",
		"bad.go:17 rand.IntN",
	}
	wantViolations(t, got, want)
}

const coreAPI = `package core

type Coordinator struct{}

func (c *Coordinator) Step() {}
func (c *Coordinator) Dump() {}
func (c *Coordinator) JoinGroup() {}
func (c *Coordinator) UpdateTopics() {}
func (c *Coordinator) joinGroup() {}
func (g *group) Heartbeat() {}
`

const coreUser = `package host

import (
	"context"

	cc "example.com/m/core"
	"example.com/other/kadm"
)

type shard struct{ c *cc.Coordinator }

func f(c *cc.Coordinator, adm *kadm.Client, s *shard) {
	c.Step()
	_ = c.Dump()
	c.JoinGroup()
	s.c.UpdateTopics()
	g := c.UpdateTopics
	adm.JoinGroup(context.Background())
	var x *cc.Coordinator
	x.JoinGroup()
	y, _ := cc.New()
	y.UpdateTopics()
	_ = g
}
`

// TestCoreCallViolations proves the API rule can fail: a use outside core
// of a Coordinator method off the surface is named, whether called, taken
// as a value, on a parameter, field, variable or core.New's result; the
// surface and other types' methods of the same name are not.
func TestCoreCallViolations(t *testing.T) {
	fset := token.NewFileSet()
	api, err := parser.ParseFile(fset, "api.go", coreAPI, 0)
	if err != nil {
		t.Fatal(err)
	}
	methods := CoordinatorMethods([]*ast.File{api})
	if strings.Join(methods, " ") != "Dump JoinGroup Step UpdateTopics" {
		t.Fatalf("Coordinator methods %v", methods)
	}
	f, err := parser.ParseFile(fset, "user.go", coreUser, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range CheckCoreCalls("host", mod+"/core", methods, fset, f) {
		got = append(got, v.Pos+" "+v.What)
	}
	want := []string{
		"user.go:15 calls Coordinator.JoinGroup",
		"user.go:16 calls Coordinator.UpdateTopics",
		"user.go:17 calls Coordinator.UpdateTopics",
		"user.go:20 calls Coordinator.JoinGroup",
		"user.go:22 calls Coordinator.UpdateTopics",
	}
	wantViolations(t, got, want)
}

func wantViolations(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
