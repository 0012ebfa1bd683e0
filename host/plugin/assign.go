package plugin

import (
	"bytes"
	"context"
	"errors"

	"github.com/coordhost/coordhost/abi"
)

// Assign runs the plugin's task assignor on req. The response has been
// decoded and validated against req (abi/SPEC.md section 6); any failure is
// an *Error and discards the instance that produced it.
func (p *Plugin) Assign(ctx context.Context, req *abi.AssignRequest) (*abi.AssignResponse, error) {
	buf := getBuffer()
	defer putBuffer(buf)
	in, err := abi.AppendAssignRequest((*buf)[:0], req)
	*buf = in
	if err != nil {
		return nil, p.err("assign", KindRequest, err)
	}
	var resp abi.AssignResponse
	err = p.call(ctx, "assign", abi.ExportAssign, in, func(out []byte) *Error {
		if err := abi.DecodeAssignResponse(out, &resp); err != nil {
			return p.err("assign", KindBadOutput, err)
		}
		if err := abi.ValidateAssignment(req, &resp); err != nil {
			return p.err("assign", KindInvalidAssignment, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &resp, nil
}

// AssignRaw runs the assign export on already-encoded input and returns (a
// copy of) the raw output, checking only that it decodes. It serves
// benchmarks of the host's own overhead.
func (p *Plugin) AssignRaw(ctx context.Context, input []byte) ([]byte, error) {
	var raw []byte
	err := p.call(ctx, "assign", abi.ExportAssign, input, func(out []byte) *Error {
		var resp abi.AssignResponse
		if err := abi.DecodeAssignResponse(out, &resp); err != nil {
			return p.err("assign", KindBadOutput, err)
		}
		raw = bytes.Clone(out)
		return nil
	})
	return raw, err
}

// Probe runs the plugin's probing policy.
func (p *Plugin) Probe(ctx context.Context, req *abi.ProbeRequest) (*abi.ProbeResponse, error) {
	buf := getBuffer()
	defer putBuffer(buf)
	in, err := abi.AppendProbeRequest((*buf)[:0], req)
	*buf = in
	if err != nil {
		return nil, p.err("probe", KindRequest, err)
	}
	var resp abi.ProbeResponse
	err = p.call(ctx, "probe", abi.ExportProbe, in, func(out []byte) *Error {
		if err := abi.DecodeProbeResponse(out, &resp); err != nil {
			return p.err("probe", KindBadOutput, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &resp, nil
}

// AssignPartitions runs the plugin's partition assignor (consumer groups)
// on req. The response has been decoded and validated against req
// (abi/SPEC.md section 6.1); any failure is an *Error and discards the
// instance that produced it.
func (p *Plugin) AssignPartitions(ctx context.Context, req *abi.PartitionAssignRequest) (*abi.PartitionAssignResponse, error) {
	in, err := abi.AppendPartitionAssignRequest(nil, req)
	if err != nil {
		return nil, p.err("assign_partitions", KindRequest, err)
	}
	var resp abi.PartitionAssignResponse
	err = p.call(ctx, "assign_partitions", abi.ExportAssignPartitions, in, func(out []byte) *Error {
		if err := abi.DecodePartitionAssignResponse(out, len(req.Topics), &resp); err != nil {
			return p.err("assign_partitions", KindBadOutput, err)
		}
		if err := abi.ValidatePartitionAssignment(req, &resp); err != nil {
			return p.err("assign_partitions", KindInvalidAssignment, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &resp, nil
}

// Fallback is an assignor run in-process when a plugin fails, typically the
// native build of the same algorithm.
type Fallback func(req *abi.AssignRequest) (*abi.AssignResponse, error)

// Outcome is the result of AssignWithFallback.
type Outcome struct {
	Response *abi.AssignResponse
	// PluginErr is the plugin's failure when the fallback answered.
	PluginErr error
	// UsedFallback reports that Response came from the fallback.
	UsedFallback bool
}

// AssignWithFallback runs the plugin and, if it fails for any reason, the
// fallback: a plugin failure never reaches the group. The error is returned
// only when the fallback fails too (or its result is invalid).
func (p *Plugin) AssignWithFallback(ctx context.Context, req *abi.AssignRequest, fb Fallback) (Outcome, error) {
	resp, perr := p.Assign(ctx, req)
	if perr == nil {
		return Outcome{Response: resp}, nil
	}
	p.metrics.fallbacks.Add(1)
	p.cfg.Logger.Warn("plugin assignor failed; the fallback assignor answers",
		"plugin", p.cfg.Name, "kind", KindOf(perr), "err", perr)
	if fb == nil {
		return Outcome{PluginErr: perr}, errors.Join(perr, errors.New("no fallback assignor configured"))
	}
	fresp, err := fb(req)
	if err == nil {
		err = abi.ValidateAssignment(req, fresp)
	}
	if err != nil {
		return Outcome{PluginErr: perr}, errors.Join(perr, err)
	}
	return Outcome{Response: fresp, PluginErr: perr, UsedFallback: true}, nil
}
