package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/host/plugin/plugintest"
)

func TestPluginCheckPassesCAssignor(t *testing.T) {
	path := plugintest.CPluginPath(t, "testdata/plugins/c/assignor.c")
	var out, errb bytes.Buffer
	if code := pluginCommand([]string{"check", "-short", path}, &out, &errb); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "PASS "+path) || !strings.Contains(out.String(), "operations: assign") {
		t.Fatalf("output:\n%s", out.String())
	}
}

func TestPluginCheckFailsInvalidPlugin(t *testing.T) {
	path := plugintest.CPluginPath(t, "testdata/plugins/c/hostile.c", "HOSTILE_TASK_TWICE")
	var out, errb bytes.Buffer
	if code := pluginCommand([]string{"check", "-short", path}, &out, &errb); code != 1 {
		t.Fatalf("exit %d\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "FAIL") || !strings.Contains(out.String(), "is active on both") {
		t.Fatalf("output:\n%s", out.String())
	}
	out.Reset()
	bad := plugintest.CPluginPath(t, "testdata/plugins/c/hostile.c", "HOSTILE_WRONG_VERSION")
	if code := pluginCommand([]string{"check", bad}, &out, &errb); code != 1 || !strings.Contains(out.String(), "plugin speaks ABI v2") {
		t.Fatalf("exit %d\n%s", code, out.String())
	}
}

// TestPluginCheckProbeOnlyModule: a module exporting only a probing policy
// is checked as one (answers decode, deterministic, order-independent).
func TestPluginCheckProbeOnlyModule(t *testing.T) {
	path := plugintest.GoPluginPath(t, "testdata/plugins/goprobe")
	var out, errb bytes.Buffer
	if code := pluginCommand([]string{"check", path}, &out, &errb); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "operations: probe") || !strings.Contains(out.String(), "ok   probe/") ||
		!strings.Contains(out.String(), "PASS "+path) {
		t.Fatalf("output:\n%s", out.String())
	}
}

// TestPluginCheckPartitionAssignor: a module exporting the partition
// assignor kind gets the partition conformance cases; a valid one passes
// and one giving a partition two owners fails naming it.
func TestPluginCheckPartitionAssignor(t *testing.T) {
	path := plugintest.GoPluginPath(t, "plugins/assignor-range/wasm")
	var out, errb bytes.Buffer
	if code := pluginCommand([]string{"check", path}, &out, &errb); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "operations: assign_partitions") || !strings.Contains(out.String(), "ok   partitions/heterogeneous-sticky") ||
		!strings.Contains(out.String(), "PASS "+path) {
		t.Fatalf("output:\n%s", out.String())
	}
	out.Reset()
	bad := plugintest.GoPluginPath(t, "testdata/plugins/gobadpartitions")
	if code := pluginCommand([]string{"check", bad}, &out, &errb); code != 1 || !strings.Contains(out.String(), "is assigned to both") {
		t.Fatalf("exit %d\n%s", code, out.String())
	}
}
