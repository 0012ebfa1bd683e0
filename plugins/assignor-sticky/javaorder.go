package sticky

import "unicode/utf16"

// Kafka's StickyTaskAssignor breaks ties by the iteration order of Java
// HashMaps keyed by process and member ids and by java.util.PriorityQueue's
// heap order. Both are deterministic functions of the keys and insertion
// order, so this file reproduces them: that is what makes the port give the
// same tasks per member as Kafka, not just equally good ones.

// javaStringHash is java.lang.String.hashCode over UTF-16 code units.
func javaStringHash(s string) int32 {
	var h int32
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		// Four characters per step: h*31^4 + c0*31^3 + c1*31^2 + c2*31 + c3
		// is the same int32 (arithmetic mod 2^32) with a quarter of the
		// serial multiplications (ids are hashed on every run).
		i := 0
		for ; i+4 <= len(s); i += 4 {
			h = 923521*h + 29791*int32(s[i]) + 961*int32(s[i+1]) + 31*int32(s[i+2]) + int32(s[i+3])
		}
		for ; i < len(s); i++ {
			h = 31*h + int32(s[i])
		}
		return h
	}
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// javaHashMapSpread is java.util.HashMap.hash: h ^ (h >>> 16).
func javaHashMapSpread(h int32) uint32 {
	u := uint32(h)
	return u ^ (u >> 16)
}

// tableSizeFor is HashMap.tableSizeFor: the smallest power of two >= c.
func tableSizeFor(c int) int {
	n := 1
	for n < c {
		n <<= 1
	}
	return n
}

// hashMapCapacity is the table size of a java.util.HashMap created with
// initial capacity initCap (0: the no-arg constructor) after n distinct
// insertions: put doubles the table after an insertion that takes the size
// past 3/4 of the capacity; computeIfAbsent doubles it before an insertion
// when the size already is past it.
func hashMapCapacity(initCap, n int, computeIfAbsent bool) int {
	c := 16
	if initCap > 0 {
		c = tableSizeFor(initCap)
	}
	if computeIfAbsent {
		n--
	}
	for n > threshold(c) {
		c <<= 1
	}
	return c
}

func threshold(c int) int {
	if c < 4 {
		return c * 3 / 4 // 1 -> 0, 2 -> 1
	}
	return c / 4 * 3
}

// hashMapOrder reorders keys (given in insertion order, as indices into
// names) into the iteration order of a HashMap that received them in that
// order: by bucket index, then within a bucket in insertion order for put
// (new nodes go to the tail) or in reverse insertion order for
// computeIfAbsent (new nodes go to the head; resizes keep relative order).
// It does not model bins of 9 or more colliding keys, which Java turns into
// trees (docs/RATIONALE.md).
//
// hashes holds, per key, javaHashMapSpread of its String.hashCode.
func hashMapOrder(keys []int32, hashes []uint32, initCap int, computeIfAbsent bool, scratch *bucketScratch) []uint32 {
	if computeIfAbsent {
		for i, j := 0, len(keys)-1; i < j; i, j = i+1, j-1 {
			keys[i], keys[j] = keys[j], keys[i]
		}
	}
	capacity := hashMapCapacity(initCap, len(keys), computeIfAbsent)
	mask := uint32(capacity - 1)
	buckets := scratch.buckets[:0]
	for _, k := range keys {
		buckets = append(buckets, hashes[k]&mask)
	}
	// Stable insertion sort by bucket: the key lists are short per process
	// and for the process map the number of processes; fall back to a
	// counting pass for large inputs.
	if len(keys) > 64 {
		countingSortByBucket(keys, buckets, capacity, scratch)
		return buckets
	}
	for i := 1; i < len(keys); i++ {
		k, b := keys[i], buckets[i]
		j := i - 1
		for j >= 0 && buckets[j] > b {
			keys[j+1], buckets[j+1] = keys[j], buckets[j]
			j--
		}
		keys[j+1], buckets[j+1] = k, b
	}
	return buckets
}

// bucketScratch is the memory hashMapOrder reuses from one run to the next.
type bucketScratch struct {
	buckets, outB []uint32
	start, outK   []int32
}

func countingSortByBucket(keys []int32, buckets []uint32, capacity int, scratch *bucketScratch) {
	start := reuse(&scratch.start, capacity+1)
	for _, b := range buckets {
		start[b+1]++
	}
	for i := 1; i <= capacity; i++ {
		start[i] += start[i-1]
	}
	outK := reuse(&scratch.outK, len(keys))
	outB := reuse(&scratch.outB, len(keys))
	for i, b := range buckets {
		outK[start[b]], outB[start[b]] = keys[i], b
		start[b]++
	}
	copy(keys, outK)
	copy(buckets, outB)
}

// procHeap is java.util.PriorityQueue<ProcessState> ordered by load
// (Comparator.comparingDouble(ProcessState::load)): the same sift-up and
// sift-down steps, so ties come out in the same order as in Java.
type procHeap struct {
	q    []int32
	load []float64
}

func (h *procHeap) offer(x int32) {
	h.q = append(h.q, x)
	q, load := h.q, h.load
	lx := load[x]
	k := len(q) - 1
	for k > 0 {
		parent := (k - 1) >> 1
		e := q[parent]
		if !(lx < load[e]) { // Java: comparator result >= 0
			break
		}
		q[k] = e
		k = parent
	}
	q[k] = x
}

// poll removes and returns the head; the slice and keys are held in locals
// (Go's wasm code generation reloads fields from memory on every access).
func (h *procHeap) poll() int32 {
	if len(h.q) == 0 {
		return -1
	}
	q, load := h.q, h.load
	res := q[0]
	n := len(q) - 1
	x := q[n]
	q = q[:n]
	h.q = q
	if n > 0 {
		lx := load[x]
		k, half := 0, n>>1
		for k < half {
			child := 2*k + 1
			c := q[child]
			if right := child + 1; right < n && load[c] > load[q[right]] {
				child = right
				c = q[child]
			}
			if !(lx > load[c]) { // Java: comparator result <= 0
				break
			}
			q[k] = c
			k = child
		}
		q[k] = x
	}
	return res
}

// memberHeap is ProcessState.membersByLoad: a PriorityQueue of member
// entries ordered by task count (Map.Entry.comparingByValue()), stored in a
// caller-provided region.
type memberHeap struct {
	q     []int32
	count []int32
}

func (h *memberHeap) offer(x int32) {
	h.q = append(h.q, x)
	q, count := h.q, h.count
	cx := count[x]
	k := len(q) - 1
	for k > 0 {
		parent := (k - 1) >> 1
		e := q[parent]
		if cx >= count[e] {
			break
		}
		q[k] = e
		k = parent
	}
	q[k] = x
}

func (h *memberHeap) poll() int32 {
	q, count := h.q, h.count
	res := q[0]
	n := len(q) - 1
	x := q[n]
	q = q[:n]
	h.q = q
	if n > 0 {
		cx := count[x]
		k, half := 0, n>>1
		for k < half {
			child := 2*k + 1
			c := q[child]
			if right := child + 1; right < n && count[c] > count[q[right]] {
				child = right
				c = q[child]
			}
			if cx <= count[c] {
				break
			}
			q[k] = c
			k = child
		}
		q[k] = x
	}
	return res
}
