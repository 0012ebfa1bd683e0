package sticky_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/abitest"
	"github.com/coordhost/coordhost/host/plugin"
	sticky "github.com/coordhost/coordhost/plugins/assignor-sticky"
)

// sameBytes reports whether two responses encode to the same bytes.
func sameBytes(a, b *abi.AssignResponse) bool {
	ab, errA := abi.AppendAssignResponse(nil, a)
	bb, errB := abi.AppendAssignResponse(nil, b)
	return errA == nil && errB == nil && string(ab) == string(bb)
}

// TestCParityVectors runs the C build through host/plugin on every
// committed parity vector and requires Kafka's output (the committed .out,
// which the Go port also matches) byte for byte, and the Go port's exact
// response.
func TestCParityVectors(t *testing.T) {
	p := loadC(t, plugin.Config{Name: "sticky-c"})
	ctx := context.Background()
	checked := 0
	for i, sh := range parityShapes() {
		name := vectorName(i)
		req := abitest.Generate(sh)
		want, err := os.ReadFile(filepath.Join(vectorDir, name+".out"))
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Assign(ctx, req)
		if len(req.Members) == 0 {
			// The host never runs an assignor for an empty group; called
			// anyway, the guest's error text is Kafka's exception message.
			var pe *plugin.Error
			if !errors.As(err, &pe) || pe.Kind != plugin.KindStatus || "error "+pe.Err.Error()+"\n" != string(want) {
				t.Errorf("%s: want Kafka's %q as the guest's status text, got %v", name, want, err)
			}
			continue
		}
		if g := formatOutput(req, got, err); g != string(want) {
			t.Errorf("%s: C build differs from Kafka's StickyTaskAssignor:\n%s", name, firstDiff(g, string(want)))
			continue
		}
		if err != nil {
			continue
		}
		// The exact response: the same bytes as the Go port's.
		goResp, goErr := sticky.Assign(req)
		if goErr != nil {
			t.Fatalf("%s: Go port failed where the C build did not: %v", name, goErr)
		}
		if !sameBytes(got, goResp) {
			t.Errorf("%s: C build's response bytes differ from the Go port's", name)
		}
		checked++
	}
	if checked < 60 {
		t.Fatalf("only %d vectors compared", checked)
	}
}

// TestCConformance runs the conformance kit on the C build.
func TestCConformance(t *testing.T) {
	p := loadC(t, plugin.Config{Name: "sticky-c"})
	assign := func(req *abi.AssignRequest) (*abi.AssignResponse, error) { return p.Assign(context.Background(), req) }
	for _, r := range abitest.Run(assign, abitest.Cases(false)) {
		if r.Err != nil {
			t.Errorf("%s: %v", r.Case, r.Err)
		}
	}
}

// TestCMatchesGoOnLargeGroups compares the C build with the Go port on the
// benchmark shapes and the 1000 members x 10,000 tasks parity case (which
// TestParityLive checks against Kafka): the same response bytes.
func TestCMatchesGoOnLargeGroups(t *testing.T) {
	if testing.Short() {
		t.Skip("large groups")
	}
	p := loadC(t, plugin.Config{Name: "sticky-c", NoDeadline: true})
	shapes := []abitest.Shape{bigShape}
	for _, c := range benchShapes() {
		shapes = append(shapes, c.s)
	}
	for i, sh := range shapes {
		req := abitest.Generate(sh)
		got, err := p.Assign(context.Background(), req)
		if err != nil {
			t.Fatalf("shape %d: %v", i, err)
		}
		want, err := sticky.Assign(req)
		if err != nil {
			t.Fatalf("shape %d: Go port: %v", i, err)
		}
		if !sameBytes(got, want) {
			t.Errorf("shape %d (%d members, %d tasks): C build's response differs from the Go port's:\n%s",
				i, sh.Members, sh.Subtopologies*sh.Partitions, firstDiff(formatOutput(req, got, nil), formatOutput(req, want, nil)))
		}
	}
}

// FuzzCDecode feeds any bytes to the C build's own request decoder (through
// host/plugin): the call must end in a status (a decode or assign error) or
// a valid response, never a trap or the deadline (a large declared task
// count may reach the memory limit). Where the Go decoder accepts the bytes,
// the C build must answer as the Go port does.
func FuzzCDecode(f *testing.F) {
	for _, c := range abitest.Cases(true) {
		b, err := abi.AppendAssignRequest(nil, c.Req)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	p := loadC(f, plugin.Config{Name: "sticky-c", PoolSize: 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := p.AssignRaw(context.Background(), b)
		if err != nil {
			var pe *plugin.Error
			if !errors.As(err, &pe) || (pe.Kind != plugin.KindStatus && pe.Kind != plugin.KindMemory) {
				t.Fatalf("C build failed on %d input bytes: %v", len(b), err)
			}
		}
		var req abi.AssignRequest
		if abi.DecodeAssignRequest(b, &req) != nil || len(req.Members) == 0 || req.NumTasks() > 1<<16 {
			return
		}
		want, werr := sticky.Assign(&req)
		if werr != nil {
			if err == nil {
				t.Fatalf("the Go port failed (%v) where the C build did not", werr)
			}
			return
		}
		if err != nil {
			t.Fatalf("C build failed on a request the Go port answers: %v", err)
		}
		wb, _ := abi.AppendAssignResponse(nil, want)
		if string(out) != string(wb) {
			t.Fatalf("C build's response differs from the Go port's")
		}
	})
}
