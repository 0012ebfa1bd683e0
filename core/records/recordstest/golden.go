// Package recordstest reads the golden coordinator-record files under
// testdata/records, written by Kafka 4.4's own classes, for the tests of
// core/records and core.
package recordstest

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
)

// Golden is one record of a golden file: a name, the key bytes and the
// value bytes (nil: tombstone).
type Golden struct {
	Name       string
	Key, Value []byte
}

// Parse reads golden lines "name keyhex valuehex" ('-' = tombstone),
// skipping blank lines and # comments; a malformed line fails tb.
func Parse(tb testing.TB, data []byte) []Golden {
	tb.Helper()
	var out []Golden
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 {
			tb.Fatalf("bad golden line %q", line)
		}
		k, err := hex.DecodeString(f[1])
		if err != nil {
			tb.Fatal(err)
		}
		var v []byte
		if f[2] != "-" {
			if v, err = hex.DecodeString(f[2]); err != nil {
				tb.Fatal(err)
			}
		}
		out = append(out, Golden{Name: f[0], Key: k, Value: v})
	}
	return out
}
