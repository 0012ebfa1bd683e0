package plugin

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/coordhost/coordhost/abi"
)

// callState is what the host functions see of the call in progress; it
// travels in the call's context.
type callState struct {
	input   []byte
	output  []byte
	written bool
	outErr  error
	maxOut  int
}

type stateKey struct{}

const maxLogBytes = 4096

func stateOf(ctx context.Context) *callState {
	st, _ := ctx.Value(stateKey{}).(*callState)
	return st
}

var (
	i32   = api.ValueTypeI32
	three = []api.ValueType{i32, i32, i32}
)

// instantiateHost provides the coordhost_v1 imports of abi/SPEC.md section 2.
func instantiateHost(ctx context.Context, rt wazero.Runtime, p *Plugin) error {
	_, err := rt.NewHostModuleBuilder(abi.ImportModule).
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(inputRead), []api.ValueType{i32, i32}, []api.ValueType{i32}).
		Export(abi.ImportInputRead).
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(outputWrite), []api.ValueType{i32, i32}, []api.ValueType{i32}).
		Export(abi.ImportOutputWrite).
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, m api.Module, stack []uint64) {
		guestLog(ctx, p, m, stack)
	}), three, nil).Export(abi.ImportLog).
		Instantiate(ctx)
	return err
}

func inputRead(ctx context.Context, m api.Module, stack []uint64) {
	dst, capacity := api.DecodeU32(stack[0]), api.DecodeI32(stack[1])
	st := stateOf(ctx)
	if st == nil || capacity < 0 {
		stack[0] = api.EncodeI32(-1)
		return
	}
	n := min(int(capacity), len(st.input))
	if !m.Memory().Write(dst, st.input[:n]) {
		stack[0] = api.EncodeI32(-1)
		return
	}
	stack[0] = api.EncodeI32(int32(n))
}

func outputWrite(ctx context.Context, m api.Module, stack []uint64) {
	src, n := api.DecodeU32(stack[0]), api.DecodeI32(stack[1])
	st := stateOf(ctx)
	switch {
	case st == nil:
		stack[0] = api.EncodeI32(-1)
		return
	case n < 0 || int(n) > st.maxOut:
		st.outErr = fmt.Errorf("output_write of %d bytes exceeds the %d-byte output limit", n, st.maxOut)
		stack[0] = api.EncodeI32(-1)
		return
	}
	b, ok := m.Memory().Read(src, uint32(n))
	if !ok {
		st.outErr = fmt.Errorf("output_write range [%d, %d) is outside memory", src, uint64(src)+uint64(n))
		stack[0] = api.EncodeI32(-1)
		return
	}
	// Read returns a view of guest memory: copy now (SPEC.md 2: the guest
	// may free the bytes before it returns), into the call's reused buffer.
	st.output = append(st.output[:0], b...)
	st.written = true
	stack[0] = 0
}

func guestLog(ctx context.Context, p *Plugin, m api.Module, stack []uint64) {
	level, src, n := api.DecodeI32(stack[0]), api.DecodeU32(stack[1]), api.DecodeU32(stack[2])
	if n > maxLogBytes {
		n = maxLogBytes
	}
	b, ok := m.Memory().Read(src, n)
	if !ok {
		return
	}
	lv := slog.LevelInfo
	switch level {
	case 0:
		lv = slog.LevelDebug
	case 2:
		lv = slog.LevelWarn
	case 3:
		lv = slog.LevelError
	}
	p.cfg.Logger.Log(ctx, lv, "plugin log: "+string(b), "plugin", p.cfg.Name)
}
