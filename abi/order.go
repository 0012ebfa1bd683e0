package abi

import (
	"slices"
	"strings"
)

// MemberIDOrder returns the indices of ms in ascending member-id order
// (byte-wise), in dst's memory; keys is scratch kept by the caller for its
// next call. Equal ids come out in index order.
//
// It sorts integers, not strings: each id contributes the five bytes after
// the prefix common to all ids, packed above its index, and only runs of
// equal packed bytes are then ordered by comparing the ids themselves. For
// random ids that is one integer sort; for ids sharing a long prefix it is
// no slower than a plain string sort. (Comparing strings through a closure
// is slow in a wasm guest, and both the decoder and the sticky assignor
// order members by id on every call.)
func MemberIDOrder(dst []int32, ms []Member, keys *[]uint64) []int32 {
	n := len(ms)
	if cap(dst) < n {
		dst = make([]int32, n)
	}
	dst = dst[:n]
	if n == 0 {
		return dst
	}
	if n >= 1<<idxBits {
		for i := range dst {
			dst[i] = int32(i)
		}
		slices.SortStableFunc(dst, func(a, b int32) int { return strings.Compare(ms[a].ID, ms[b].ID) })
		return dst
	}
	common := len(ms[0].ID)
	for i := 1; i < n && common > 0; i++ {
		common = commonPrefix(ms[0].ID[:common], ms[i].ID)
	}
	if cap(*keys) < 2*n {
		*keys = make([]uint64, 2*n)
	}
	ks := (*keys)[:n]
	for i := range ms {
		ks[i] = packPrefix(ms[i].ID, common)<<idxBits | uint64(i)
	}
	if n <= radixMin {
		slices.Sort(ks)
	} else {
		ks = radixSortPrefix(ks, (*keys)[n:2*n])
	}
	for i, k := range ks {
		dst[i] = int32(k & idxMask)
	}
	// Runs whose packed bytes are equal: order by the rest of the id.
	for lo := 0; lo < n; {
		hi := lo + 1
		for hi < n && ks[hi]>>idxBits == ks[lo]>>idxBits {
			hi++
		}
		if hi-lo > 1 {
			slices.SortStableFunc(dst[lo:hi], func(a, b int32) int {
				return strings.Compare(ms[a].ID[common:], ms[b].ID[common:])
			})
		}
		lo = hi
	}
	return dst
}

// radixSortPrefix sorts keys whose low idxBits hold their own position
// (so they are already in that order) by their high bits, with a stable
// byte-wise LSD radix sort: the result is the order of the whole keys.
// tmp has len(keys) room; the result is keys or tmp. For a thousand
// members this is several times cheaper than a comparison sort in a wasm
// guest (no data-dependent branches, no calls).
func radixSortPrefix(keys, tmp []uint64) []uint64 {
	src, dst := keys, tmp[:len(keys)]
	for shift := uint(idxBits); shift < 64; shift += 8 {
		var pos [256]int
		for _, k := range src {
			pos[byte(k>>shift)]++
		}
		if pos[byte(src[0]>>shift)] == len(src) {
			continue // one digit value: this pass would change nothing
		}
		sum := 0
		for d, c := range pos {
			pos[d] = sum
			sum += c
		}
		for _, k := range src {
			d := byte(k >> shift)
			dst[pos[d]] = k
			pos[d]++
		}
		src, dst = dst, src
	}
	return src
}

// radixMin is the size up to which a comparison sort is cheaper.
const radixMin = 128

const (
	prefixBytes = 5
	idxBits     = 64 - 8*prefixBytes // 24 bits: up to 16M members (the limit is 65,536)
	idxMask     = 1<<idxBits - 1
)

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// packPrefix packs s[from:from+prefixBytes] big-endian, zero-padded: the
// packing never orders two strings against their byte-wise order.
func packPrefix(s string, from int) uint64 {
	var v uint64
	for i := from; i < from+prefixBytes; i++ {
		v <<= 8
		if i < len(s) {
			v |= uint64(s[i])
		}
	}
	return v
}
