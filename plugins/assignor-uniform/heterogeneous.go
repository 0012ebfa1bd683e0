package uniform

import (
	"cmp"
	"slices"

	"github.com/coordhost/coordhost/abi"
)

// maxIterations bounds the final balancing passes over the topics, as
// Kafka's MAX_ITERATION_COUNT does.
const maxIterations = 16

// hetero is the state of UniformHeterogeneousAssignmentBuilder: members are
// numbered in member-map order; each topic's subscribers are listed in
// ascending member number.
type hetero struct {
	req         *abi.PartitionAssignRequest
	members     []int   // member number -> request index
	subscribers [][]int // per topic index: member numbers
	owners      [][]int // per topic index: owner member number or -1
	sizes       []int   // per member number: partitions in the target
	target      []assignment
	subscribed  []int32 // topics with at least one subscriber, ascending
}

// heterogeneous is UniformHeterogeneousAssignmentBuilder: members keep the
// current partitions of topics they still subscribe to; unassigned
// partitions go, topic by topic (most partitions per subscriber first), to
// the least loaded subscriber; then partitions move from the most to the
// least loaded subscribers of each topic until balanced or the iteration
// limit is hit.
func heterogeneous(req *abi.PartitionAssignRequest, members []int) ([]assignment, error) {
	h := &hetero{req: req, members: members}
	h.subscribers = make([][]int, len(req.Topics))
	for num, mi := range h.members {
		for _, t := range req.Members[mi].Subscribed {
			h.subscribers[t] = append(h.subscribers[t], num)
		}
	}
	h.owners = make([][]int, len(req.Topics))
	for t, subs := range h.subscribers {
		if len(subs) == 0 {
			continue
		}
		h.subscribed = append(h.subscribed, int32(t))
		h.owners[t] = make([]int, req.Topics[t].Partitions)
		for p := range h.owners[t] {
			h.owners[t][p] = -1
		}
	}
	h.sizes = make([]int, len(h.members))
	h.target = make([]assignment, len(req.Members))
	for i := range h.target {
		h.target[i] = assignment{}
	}
	if len(h.subscribed) == 0 {
		return h.target, nil
	}
	h.keepSubscribed()
	h.assignUnassigned()
	h.balance()
	return h.target, nil
}

// keepSubscribed keeps each member's current partitions of the topics it
// subscribes to and revokes the rest.
func (h *hetero) keepSubscribed() {
	for num, mi := range h.members {
		m := &h.req.Members[mi]
		for _, tp := range m.Assigned {
			if _, ok := slices.BinarySearch(m.Subscribed, tp.Topic); !ok {
				continue
			}
			h.target[mi][tp.Topic] = slices.Clone(tp.Partitions)
			h.sizes[num] += len(tp.Partitions)
			for _, p := range tp.Partitions {
				h.owners[tp.Topic][p] = num
			}
		}
	}
}

// sortTopics orders topics by partitions per subscriber (descending), then
// subscriber count (ascending), then topic id (Uuid order).
func (h *hetero) sortTopics(ts []int32) []int32 {
	out := slices.Clone(ts)
	slices.SortFunc(out, func(a, b int32) int {
		pa, pb := float64(h.req.Topics[a].Partitions), float64(h.req.Topics[b].Partitions)
		sa, sb := len(h.subscribers[a]), len(h.subscribers[b])
		if c := cmp.Compare(pb/float64(sb), pa/float64(sa)); c != 0 {
			return c
		}
		if c := cmp.Compare(sa, sb); c != 0 {
			return c
		}
		return uuidCompare(h.req.Topics[a].ID, h.req.Topics[b].ID)
	})
	return out
}

// assignUnassigned hands each unowned partition to the least loaded
// subscriber of its topic.
func (h *hetero) assignUnassigned() {
	var topics []int32
	for _, t := range h.subscribed {
		if slices.Contains(h.owners[t], -1) {
			topics = append(topics, t)
		}
	}
	b := &balancer{sizes: h.sizes}
	for _, t := range h.sortTopics(topics) {
		b.initialize(h.subscribers[t])
		for p, o := range h.owners[t] {
			if o == -1 {
				h.move(t, int32(p), b.nextLeastLoaded())
			}
		}
	}
}

// balance runs balanceTopic over the topics with two or more subscribers
// until a full pass moves nothing or maxIterations passes were made.
func (h *hetero) balance() {
	var topics []int32
	for _, t := range h.subscribed {
		if len(h.subscribers[t]) >= 2 {
			topics = append(topics, t)
		}
	}
	if len(topics) == 0 {
		return
	}
	sorted := h.sortTopics(topics)
	last := -1
	b := &balancer{sizes: h.sizes}
	for i := 0; i < maxIterations; i++ {
		for ti, t := range sorted {
			if ti == last {
				return
			}
			if h.balanceTopic(t, b) > 0 || last == -1 {
				last = ti
			}
		}
	}
}

// balanceTopic moves partitions of topic t from its most to its least
// loaded subscribers, each giving up its highest-numbered partitions first;
// it returns the number moved.
func (h *hetero) balanceTopic(t int32, b *balancer) int {
	if b.initialize(h.subscribers[t]) <= 1 {
		return 0
	}
	owners := h.owners[t]
	parts := make([]int32, len(owners))
	for p := range parts {
		parts[p] = int32(p)
	}
	slices.SortFunc(parts, func(x, y int32) int {
		if c := cmp.Compare(owners[x], owners[y]); c != 0 {
			return c
		}
		return cmp.Compare(x, y)
	})
	start, end := map[int]int{}, map[int]int{}
	for i, p := range parts {
		if _, ok := start[owners[p]]; !ok {
			start[owners[p]] = i
		}
		end[owners[p]] = i + 1
	}
	moved := 0
	for !b.balanced() {
		most := -1
		for {
			most = b.nextMostLoaded()
			if most == -1 {
				break
			}
			if e, ok := end[most]; !ok || e-start[most] <= 0 {
				b.excludeMostLoaded()
				continue
			}
			break
		}
		if most == -1 {
			break
		}
		p := parts[end[most]-1]
		end[most]--
		least := b.nextLeastLoaded()
		if b.balanced() {
			break
		}
		h.move(t, p, least)
		moved++
	}
	return moved
}

// move assigns partition p of topic t to member number to, taking it from
// its owner if it has one.
func (h *hetero) move(t, p int32, to int) {
	if from := h.owners[t][p]; from != -1 {
		a := h.target[h.members[from]]
		ps := a[t]
		if i := slices.Index(ps, p); i >= 0 {
			ps = slices.Delete(ps, i, i+1)
		}
		if len(ps) == 0 {
			delete(a, t)
		} else {
			a[t] = ps
		}
		h.sizes[from]--
	}
	a := h.target[h.members[to]]
	a[t] = append(a[t], p)
	h.owners[t][p] = to
	h.sizes[to]++
}

// balancer is Kafka's MemberAssignmentBalancer: the subscribers of one
// topic sorted by load, with a least loaded range growing from the left and
// a most loaded range growing from the right.
type balancer struct {
	sizes  []int
	sorted []int

	leastEnd, leastCount, nextLeast         int
	mostStart, mostEnd, mostCount, nextMost int
}

// initialize resets the balancer for members and returns the difference
// between the most and least loaded member.
func (b *balancer) initialize(members []int) int {
	b.sorted = append(b.sorted[:0], members...)
	slices.SortFunc(b.sorted, func(x, y int) int {
		if c := cmp.Compare(b.sizes[x], b.sizes[y]); c != 0 {
			return c
		}
		return cmp.Compare(x, y)
	})
	n := len(b.sorted)
	first, last := b.sizes[b.sorted[0]], b.sizes[b.sorted[n-1]]
	b.leastEnd, b.leastCount, b.nextLeast = 0, first-1, 0
	b.mostStart, b.mostEnd, b.mostCount, b.nextMost = n, n, last+1, n-1
	return last - first
}

// nextLeastLoaded returns the member to give the next partition to.
func (b *balancer) nextLeastLoaded() int {
	if b.nextLeast >= b.leastEnd {
		b.leastCount++
		for b.leastEnd < len(b.sorted) && b.sizes[b.sorted[b.leastEnd]] == b.leastCount {
			b.leastEnd++
		}
		b.nextLeast = 0
	}
	m := b.sorted[b.nextLeast]
	b.nextLeast++
	return m
}

// nextMostLoaded returns the member to take the next partition from, or -1.
func (b *balancer) nextMostLoaded() int {
	if b.nextMost < b.mostStart {
		if b.mostEnd <= b.mostStart && b.mostStart > 0 {
			b.mostCount = b.sizes[b.sorted[b.mostStart-1]]
		} else {
			b.mostCount--
		}
		for b.mostStart > 0 && b.sizes[b.sorted[b.mostStart-1]] == b.mostCount {
			b.mostStart--
		}
		b.nextMost = b.mostEnd - 1
	}
	if b.nextMost < 0 {
		return -1
	}
	m := b.sorted[b.nextMost]
	b.nextMost--
	return m
}

// excludeMostLoaded drops the member nextMostLoaded returned last from the
// most loaded range.
func (b *balancer) excludeMostLoaded() {
	i := b.nextMost + 1
	b.sorted[i], b.sorted[b.mostEnd-1] = b.sorted[b.mostEnd-1], b.sorted[i]
	b.mostEnd--
}

func (b *balancer) balanced() bool { return b.mostCount-b.leastCount <= 1 }
