package runtime

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/internal/testtool"
)

// partitionVectors were computed by Java (OpenJDK 17) with
// testdata/PartitionFor.java, which applies Kafka's rule
// (Utils.abs(groupId.hashCode()) % 50):
//
//	java testdata/PartitionFor.java 50 "" a my-group polygenelubricants GydZG_ \
//	    "DESIGNING WORKHOUSES" stream-app-ü grüppe-😀 console-consumer-12345 canary-0 canary-1 flood
//
// Three ids hash to Integer.MIN_VALUE, the case where Kafka's Utils.abs
// differs from Math.abs; grüppe-😀 has a surrogate pair.
var partitionVectors = []struct {
	group string
	hash  int32
	p50   int
}{
	{"", 0, 0},
	{"a", 97, 47},
	{"my-group", -1906497762, 12},
	{"polygenelubricants", -2147483648, 0},
	{"GydZG_", -2147483648, 0},
	{"DESIGNING WORKHOUSES", -2147483648, 0},
	{"stream-app-ü", 1758543811, 11},
	{"grüppe-😀", -1039948164, 14},
	{"console-consumer-12345", 158455506, 6},
	{"canary-0", -124622789, 39},
	{"canary-1", -124622788, 38},
	{"flood", 97526782, 32},
}

func TestPartitionForMatchesJavaVectors(t *testing.T) {
	for _, v := range partitionVectors {
		if h := javaStringHash(v.group); h != v.hash {
			t.Errorf("hash(%q) = %d, Java says %d", v.group, h, v.hash)
		}
		if p := PartitionFor(v.group, 50); p != v.p50 {
			t.Errorf("PartitionFor(%q, 50) = %d, Java says %d", v.group, p, v.p50)
		}
	}
	if p := PartitionFor("my-group", 1); p != 0 {
		t.Errorf("one partition: %d", p)
	}
}

// TestPartitionForMatchesJava runs the Java program on fresh ids and
// partition counts (java is required under CI=true).
func TestPartitionForMatchesJava(t *testing.T) {
	java := testtool.Require(t, "java")
	groups := []string{"x", "connect-cluster", "app-1-ü", "𝄞clef", "polygenelubricants", "Aa", "BB", strings.Repeat("long-group-", 40)}
	for _, n := range []int{7, 1000} {
		args := append([]string{"testdata/PartitionFor.java", strconv.Itoa(n)}, groups...)
		out, err := exec.Command(java, args...).Output()
		if err != nil {
			t.Fatalf("java: %v", err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != len(groups) {
			t.Fatalf("java printed %d lines for %d groups", len(lines), len(groups))
		}
		for i, g := range groups {
			want := lines[i]
			got := strconv.Itoa(int(javaStringHash(g))) + " " + strconv.Itoa(PartitionFor(g, n))
			if got != want {
				t.Errorf("n=%d %q: got %q, Java %q", n, g, got, want)
			}
		}
	}
}
