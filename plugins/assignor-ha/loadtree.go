package ha

// loadTree is a tournament tree over the clients: every inner node holds
// the client with the least (load, index) below it, so the root is what
// leastLoaded would pick with no constraint, found without a pass over
// every client, and a client's change of load costs one path to the root.
// A client can be taken out (out) and put back (fix).
type loadTree struct {
	leaves int     // a power of two >= the number of clients
	win    []int32 // win[1] is the root; leaf of client c at leaves+c; -1: none
}

func newLoadTree(loads []float64) *loadTree {
	n := 1
	for n < len(loads) {
		n <<= 1
	}
	t := &loadTree{leaves: n, win: make([]int32, 2*n)}
	for i := range t.win[n:] {
		t.win[n+i] = -1
		if i < len(loads) {
			t.win[n+i] = int32(i)
		}
	}
	for i := n - 1; i >= 1; i-- {
		t.win[i] = lesser(loads, t.win[2*i], t.win[2*i+1])
	}
	return t
}

// lesser is the client with the lower (load, index) of a and b, which may
// be -1 (no client).
func lesser(loads []float64, a, b int32) int32 {
	switch {
	case a < 0:
		return b
	case b < 0:
		return a
	case loads[b] < loads[a] || (loads[b] == loads[a] && b < a):
		return b
	}
	return a
}

// least is the client with the least (load, index) in the tree; -1 if none.
func (t *loadTree) least() int { return int(t.win[1]) }

// fix puts client c in its leaf (back) and recomputes its path after its
// load changed.
func (t *loadTree) fix(c int, loads []float64) {
	t.set(c, int32(c), loads)
}

// out takes client c out of the tree until fix puts it back.
func (t *loadTree) out(c int, loads []float64) { t.set(c, -1, loads) }

func (t *loadTree) set(c int, v int32, loads []float64) {
	i := t.leaves + c
	t.win[i] = v
	for i >>= 1; i >= 1; i >>= 1 {
		t.win[i] = lesser(loads, t.win[2*i], t.win[2*i+1])
	}
}
