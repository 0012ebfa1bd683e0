package sticky

import (
	"math/rand/v2"
	"testing"
)

// TestJavaStringHash: the unrolled hash equals String.hashCode's
// definition, s[0]*31^(n-1) + ... + s[n-1] in int32, for every length
// around the unrolling step, and Java's value for known strings.
func TestJavaStringHash(t *testing.T) {
	for s, want := range map[string]int32{"": 0, "hello": 99162322, "Aa": 2112, "BB": 2112} {
		if got := javaStringHash(s); got != want {
			t.Errorf("hash(%q) = %d, want %d", s, got, want)
		}
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for n := range 40 {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.IntN(128))
		}
		var want int32
		for _, c := range b {
			want = 31*want + int32(c)
		}
		if got := javaStringHash(string(b)); got != want {
			t.Fatalf("hash of %d bytes %q = %d, want %d", n, b, got, want)
		}
	}
}
