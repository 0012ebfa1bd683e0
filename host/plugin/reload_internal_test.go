package plugin

import (
	"bytes"
	"context"
	"testing"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/abitest"
	"github.com/coordhost/coordhost/host/plugin/plugintest"
)

// TestReloadInFlightFinishesOnOld: a call holding the old module when a
// reload swaps in a new one completes on the old module; new calls run the
// new module; the old module closes when its last call returns.
func TestReloadInFlightFinishesOnOld(t *testing.T) {
	ctx := context.Background()
	oldWasm := plugintest.CPlugin(t, "testdata/plugins/c/hostile.c") // valid: every task on the first member
	newWasm := plugintest.CPlugin(t, "testdata/plugins/c/assignor.c")
	p, err := Load(ctx, oldWasm, Config{Name: "reload"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	req := abitest.Generate(abitest.Shape{Members: 3, Processes: 3, Subtopologies: 1, Partitions: 6, Seed: 5})
	in, _ := abi.AppendAssignRequest(nil, req)

	inFlight, err := p.acquire() // a call in progress on the old module
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Reload(ctx, newWasm); err != nil {
		t.Fatal(err)
	}
	resp, err := p.Assign(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Members[1].Active) == 0 {
		t.Fatalf("new calls did not run the new module: %+v", resp)
	}
	var out []byte
	err = p.callModule(ctx, inFlight, "assign", abi.ExportAssign, in, func(b []byte) *Error {
		out = bytes.Clone(b)
		return nil
	})
	if err != nil {
		t.Fatalf("the in-flight call failed on the old module: %v", err)
	}
	var old abi.AssignResponse
	if err := abi.DecodeAssignResponse(out, &old); err != nil || len(old.Members[0].Active) != 6 {
		t.Fatalf("in-flight call did not run the old module: %+v %v", old, err)
	}
	inst := <-inFlight.pool.idle
	inFlight.pool.idle <- inst
	if inFlight.ref() {
		t.Fatal("a retired module accepted a new call")
	}
	inFlight.unref(ctx) // the in-flight call returns
	if !inst.mod.IsClosed() {
		t.Fatal("the old module's instances stayed open after its last call")
	}
	if m := p.Metrics(); m.Reloads != 1 {
		t.Fatalf("metrics %+v", m)
	}
}

// BenchmarkInstantiate measures creating a fresh instance of an already
// compiled Go plugin (instantiate + _initialize): the cost paid after every
// discarded instance.
func BenchmarkInstantiate(b *testing.B) {
	ctx := context.Background()
	p, err := Load(ctx, plugintest.GoPlugin(b, "plugins/assignor-sticky/wasm"), Config{Name: "sticky"})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close(ctx)
	m := p.cur.Load()
	for b.Loop() {
		inst, err := p.instantiate(ctx, m)
		if err != nil {
			b.Fatal(err)
		}
		_ = inst.mod.Close(ctx)
	}
}

// BenchmarkLoadCached measures loading a Go plugin whose compiled code is
// already in the process's compilation cache (a reload of a known module).
func BenchmarkLoadCached(b *testing.B) {
	ctx := context.Background()
	wasm := plugintest.GoPlugin(b, "plugins/assignor-sticky/wasm")
	p, err := Load(ctx, wasm, Config{})
	if err != nil {
		b.Fatal(err)
	}
	p.Close(ctx)
	for b.Loop() {
		p, err := Load(ctx, wasm, Config{})
		if err != nil {
			b.Fatal(err)
		}
		p.Close(ctx)
	}
}
