package abi_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/abi"
)

// TestMemberIDOrder compares MemberIDOrder with a plain stable sort of the
// ids on id sets built to hit its corners: random ids, a long shared
// prefix, ids that are prefixes of others, NUL bytes, duplicates, one id.
func TestMemberIDOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := "\x00\x01abcz\xff"
	sets := map[string]func(i int) string{
		"random":        func(int) string { return fmt.Sprintf("%016x", rng.Uint64()) },
		"shared prefix": func(i int) string { return fmt.Sprintf("member-%05d", rng.IntN(100000)) },
		"prefixes": func(int) string {
			b := make([]byte, rng.IntN(9))
			for j := range b {
				b[j] = alphabet[rng.IntN(len(alphabet))]
			}
			return string(b)
		},
		"duplicates": func(int) string { return fmt.Sprint(rng.IntN(5)) },
		"empty ids":  func(int) string { return strings.Repeat("a", rng.IntN(2)) },
	}
	var keys []uint64
	var dst []int32
	for name, gen := range sets {
		for _, n := range []int{0, 1, 2, 7, 128, 129, 300, 1000} {
			ms := make([]abi.Member, n)
			for i := range ms {
				ms[i].ID = gen(i)
			}
			want := make([]int32, n)
			for i := range want {
				want[i] = int32(i)
			}
			slices.SortStableFunc(want, func(a, b int32) int { return strings.Compare(ms[a].ID, ms[b].ID) })
			dst = abi.MemberIDOrder(dst, ms, &keys)
			if !slices.Equal(dst, want) {
				t.Fatalf("%s, %d ids: got %v, want %v", name, n, dst, want)
			}
		}
	}
}
