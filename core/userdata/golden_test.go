package userdata

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/internal/testtool"
)

var update = flag.Bool("update", false, "regenerate testdata/userdata/golden.txt with Java (interop/userdata-golden)")

// TestGoldenDecode: our decoders read every vector Java wrote, and see what
// Java's decoders see.
func TestGoldenDecode(t *testing.T) {
	for _, g := range readGolden(t) {
		got, err := describe(g.kind, g.bytes)
		if err != nil {
			t.Errorf("%s %s: decode: %v", g.kind, g.name, err)
			continue
		}
		if got != g.javaDesc {
			t.Errorf("%s %s: decoded\n  ours: %s\n  java: %s", g.kind, g.name, got, g.javaDesc)
		}
	}
}

// TestGoldenEncode: our encoders, given each case's input, write Java's
// bytes: identical for SubscriptionInfo, ConsumerProtocol and AssignmentInfo
// v1–4, identical up to the numbering of the topic dictionary for
// AssignmentInfo v5+.
func TestGoldenEncode(t *testing.T) {
	golden := map[string][]byte{}
	for _, g := range readGolden(t) {
		golden[g.kind+" "+g.name] = g.bytes
	}
	perVersion := map[string]int{}
	for _, c := range readCases(t) {
		want, ok := golden[c.kind+" "+c.name]
		if !ok {
			t.Errorf("%s %s: no golden vector (regenerate with -update)", c.kind, c.name)
			continue
		}
		got, err := c.encode()
		if err != nil {
			t.Errorf("%s %s: encode: %v", c.kind, c.name, err)
			continue
		}
		perVersion[fmt.Sprintf("%s v%d", c.kind, c.version)]++
		if c.kind == "asg" && c.version >= 5 {
			compareUpToDictionary(t, c.name, got, want)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s %s: encoded\n  ours: %x\n  java: %x", c.kind, c.name, got, want)
		}
	}
	for kind, versions := range map[string][2]int{"sub": {1, 11}, "asg": {1, 11}, "cps": {0, 3}, "cpa": {0, 3}} {
		for v := versions[0]; v <= versions[1]; v++ {
			if n := perVersion[fmt.Sprintf("%s v%d", kind, v)]; n < 3 {
				t.Errorf("%s v%d: %d golden cases, want at least 3", kind, v, n)
			}
		}
	}
}

func compareUpToDictionary(t *testing.T, name string, got, want []byte) {
	t.Helper()
	cg, err := canonicalAssignmentInfo(got)
	if err != nil {
		t.Errorf("asg %s: ours: %v", name, err)
		return
	}
	cw, err := canonicalAssignmentInfo(want)
	if err != nil {
		t.Errorf("asg %s: java: %v", name, err)
		return
	}
	if !bytes.Equal(cg, cw) || len(got) != len(want) {
		t.Errorf("asg %s: differ beyond dictionary numbering\n  ours: %x\n  java: %x", name, got, want)
	}
}

// canonicalAssignmentInfo rewrites a v5+ AssignmentInfo so that its topic
// dictionary lists the names in byte order numbered 0, 1, … and the host
// maps refer to those numbers; every other byte is copied. Two encodings
// that differ only in how they number the dictionary canonicalise to the
// same bytes. It walks the raw bytes itself (not through DecodeAssignmentInfo)
// so that a decoder bug cannot hide an encoder bug.
func canonicalAssignmentInfo(b []byte) ([]byte, error) {
	w := &walker{b: b}
	v := int32(w.u32())
	w.skip(4) // commonly supported
	for range w.u32() {
		w.task(v)
	}
	for range w.u32() {
		w.task(v)
		w.plainPartitions()
	}
	prefix := w.off
	dict := map[uint32]string{}
	var names []string
	for range w.u32() {
		idx := w.u32()
		name := w.utf()
		if _, dup := dict[idx]; dup || slices.Contains(names, name) {
			return nil, fmt.Errorf("dictionary repeats index %d or name %q", idx, name)
		}
		dict[idx] = name
		names = append(names, name)
	}
	slices.Sort(names)
	out := slices.Clone(b[:prefix])
	out = binary.BigEndian.AppendUint32(out, uint32(len(names)))
	for i, n := range names {
		out = binary.BigEndian.AppendUint32(out, uint32(i))
		out = binary.BigEndian.AppendUint16(out, uint16(len(n)))
		out = append(out, n...)
	}
	maps := 2
	if v == 5 {
		maps = 1
	}
	for range maps {
		start := w.off
		hosts := w.u32()
		out = append(out, b[start:w.off]...)
		for range hosts {
			start := w.off
			w.utf()
			w.skip(4) // port
			n := w.u32()
			out = append(out, b[start:w.off]...)
			for range n {
				name, ok := dict[w.u32()]
				if !ok {
					return nil, errors.New("host map refers to an index missing from the dictionary")
				}
				out = binary.BigEndian.AppendUint32(out, uint32(slices.Index(names, name)))
				out = binary.BigEndian.AppendUint32(out, w.u32())
			}
		}
	}
	if w.err != nil {
		return nil, w.err
	}
	return append(out, b[w.off:]...), nil
}

type walker struct {
	b   []byte
	off int
	err error
}

func (w *walker) skip(n int) []byte {
	if w.err != nil || n > len(w.b)-w.off {
		w.err = errors.New("truncated")
		return make([]byte, n)
	}
	w.off += n
	return w.b[w.off-n : w.off]
}

func (w *walker) u32() uint32 { return binary.BigEndian.Uint32(w.skip(4)) }
func (w *walker) utf() string { return string(w.skip(int(binary.BigEndian.Uint16(w.skip(2))))) }

func (w *walker) task(v int32) {
	w.skip(8)
	if v >= 10 {
		w.skip(2 * int(w.u32()))
	}
}

func (w *walker) plainPartitions() {
	for range w.u32() {
		w.utf()
		w.skip(4)
	}
}

// TestGoldenJava runs Kafka's own classes (interop/userdata-golden):
//   - it regenerates every golden vector from cases.txt and requires the
//     committed golden.txt to be identical (with -update it rewrites it);
//   - Java decodes the bytes our encoders wrote for every case and must see
//     what it saw in its own bytes;
//   - Java and Go decode every truncation of the "basic" vectors and must
//     both reject every one;
//   - Java decodes every edge case and must agree with edgeCases.want.
func TestGoldenJava(t *testing.T) {
	regenerated := string(testtool.JavaMain(t, javaDir, javaMain, "generate", casesFile))
	if *update {
		if err := os.WriteFile(goldenFile, []byte(regenerated), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	committed, err := os.ReadFile(goldenFile)
	if err != nil {
		t.Fatal(err)
	}
	if regenerated != string(committed) {
		t.Fatalf("%s is stale: Kafka's classes now write different vectors; run\n  go test ./core/userdata -run TestGoldenJava -update\nand review the diff", goldenFile)
	}

	javaDesc := map[string]string{}
	for _, g := range parseGolden(t, regenerated) {
		javaDesc[g.kind+" "+g.name] = g.javaDesc
	}
	var input strings.Builder
	want := map[string]string{}
	for _, c := range readCases(t) {
		b, err := c.encode()
		if err != nil {
			t.Fatalf("%s %s: encode: %v", c.kind, c.name, err)
		}
		key := "ours:" + c.kind + ":" + c.name
		fmt.Fprintf(&input, "%s\t%s\t%x\n", key, c.kind, b)
		want[key] = javaDesc[c.kind+" "+c.name]
	}
	for _, g := range parseGolden(t, regenerated) {
		if !strings.HasPrefix(g.name, "basic/") {
			continue
		}
		for n := 0; n < len(g.bytes); n++ {
			key := fmt.Sprintf("trunc:%s:%s:%d", g.kind, g.name, n)
			fmt.Fprintf(&input, "%s\t%s\t%s\n", key, g.kind, hex.EncodeToString(g.bytes[:n]))
			if _, err := describe(g.kind, g.bytes[:n]); err == nil {
				t.Errorf("%s %s truncated to %d bytes: our decoder accepted it", g.kind, g.name, n)
			}
			want[key] = "ERROR"
		}
	}
	for i, c := range edgeCases {
		key := fmt.Sprintf("edge:%d", i)
		fmt.Fprintf(&input, "%s\t%s\t%s\n", key, c.kind, c.hex)
		switch c.want {
		case "accept":
			b, _ := hex.DecodeString(c.hex)
			desc, err := describe(c.kind, b)
			if err != nil {
				t.Fatalf("edge case %q: %v", c.name, err) // TestEdgeCases reports it too
			}
			want[key] = desc
		case "reject":
			want[key] = "ERROR"
		default:
			want[key] = "JAVA ACCEPTS"
		}
	}
	file := filepath.Join(t.TempDir(), "decode.txt")
	if err := os.WriteFile(file, []byte(input.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(testtool.JavaMain(t, javaDir, javaMain, "decode", file))), "\n") {
		key, got, _ := strings.Cut(line, "\t")
		w, ok := want[key]
		if !ok {
			t.Fatalf("java printed an unknown line %q", line)
		}
		seen++
		if strings.HasPrefix(key, "edge:") {
			i, _ := strconv.Atoi(strings.TrimPrefix(key, "edge:"))
			key = "edge case " + strconv.Quote(edgeCases[i].name)
		}
		if w == "JAVA ACCEPTS" {
			if strings.HasPrefix(got, "ERROR") {
				t.Errorf("%s: java now rejects it (%s); update docs/USERDATA.md and make it a reject case", key, got)
			}
		} else if w == "ERROR" {
			if !strings.HasPrefix(got, "ERROR") {
				t.Errorf("%s: java accepted it: %s", key, got)
			}
		} else if got != w {
			t.Errorf("%s: java decoded our bytes as\n  %s\nbut its own as\n  %s", key, got, w)
		}
	}
	if seen != len(want) {
		t.Errorf("java answered %d of %d inputs", seen, len(want))
	}
}
