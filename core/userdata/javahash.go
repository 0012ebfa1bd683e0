package userdata

// Java's SubscriptionInfo writes some collections in java.util.HashMap
// iteration order: the v1–6 prevTasks/standbyTasks sets (HashSet<TaskId>
// filled with add) and the v7–9 subtopology groups (HashMap<Integer, List>
// filled with computeIfAbsent). Decoders do not care about that order, but
// writing the same order makes our bytes identical to Java's, which is what
// the golden tests check. javaHashOrder reproduces OpenJDK's HashMap
// (Java 8 and later): 16 buckets at first, load factor 0.75, doubling with
// order-preserving bucket splits, add() appending to a bucket and
// computeIfAbsent() prepending to it. A bucket that Java would turn into a
// red-black tree (9+ colliding keys in a table of 64+ buckets) is kept as a
// list here, so only in that case can the order differ from Java's.

const (
	javaHashInitialCapacity = 16
	javaTreeifyMinCapacity  = 64
)

// javaHashOrder returns the positions of hashes (distinct keys, in insertion
// order) in the order a java.util.HashMap iterates them. prepend selects
// computeIfAbsent insertion; otherwise put/add insertion.
func javaHashOrder(hashes []int32, prepend bool) []int {
	t := &javaTable{bins: make([][]int, javaHashInitialCapacity)}
	for i, h := range hashes {
		if prepend {
			t.computeIfAbsent(i, h, hashes)
		} else {
			t.put(i, h, hashes)
		}
	}
	order := make([]int, 0, len(hashes))
	for _, bin := range t.bins {
		order = append(order, bin...)
	}
	return order
}

type javaTable struct {
	bins [][]int
	size int
}

func spread(h int32) uint32 { u := uint32(h); return u ^ u>>16 }

func (t *javaTable) index(h int32) int { return int(spread(h) & uint32(len(t.bins)-1)) }

func (t *javaTable) threshold() int { return len(t.bins) * 3 / 4 }

// put follows HashMap.putVal: append, maybe resize instead of treeifying,
// then resize when the new size passes the threshold.
func (t *javaTable) put(i int, h int32, hashes []int32) {
	b := t.index(h)
	before := len(t.bins[b])
	t.bins[b] = append(t.bins[b], i)
	if before >= 8 && len(t.bins) < javaTreeifyMinCapacity {
		t.resize(hashes)
	}
	t.size++
	if t.size > t.threshold() {
		t.resize(hashes)
	}
}

// computeIfAbsent follows HashMap.computeIfAbsent: resize first when the
// size already passed the threshold, then prepend.
func (t *javaTable) computeIfAbsent(i int, h int32, hashes []int32) {
	if t.size > t.threshold() {
		t.resize(hashes)
	}
	b := t.index(h)
	before := len(t.bins[b])
	t.bins[b] = append([]int{i}, t.bins[b]...)
	if before >= 7 && len(t.bins) < javaTreeifyMinCapacity {
		t.resize(hashes)
	}
	t.size++
}

func (t *javaTable) resize(hashes []int32) {
	old := t.bins
	t.bins = make([][]int, 2*len(old))
	for j, bin := range old {
		for _, i := range bin {
			if spread(hashes[i])&uint32(len(old)) == 0 {
				t.bins[j] = append(t.bins[j], i)
			} else {
				t.bins[j+len(old)] = append(t.bins[j+len(old)], i)
			}
		}
	}
}
