package ha

import (
	"sort"
	"strconv"
)

// assignStandbys places num.standby.replicas standbys per stateful task
// (HighAvailabilityTaskAssignor.assignStandbyReplicaTasks): client-tag
// aware when rack.aware.assignment.tags is set, least-loaded otherwise,
// then balanced over clients (tag-aware: only between clients with the
// same tags).
func (s *state) assignStandbys(replicas int, tagKeys []string, subIDs []string) {
	if replicas <= 0 {
		return
	}
	s.reserve(kindStandby, min(replicas, len(s.clients)-1)*s.statefulCount()) // at most one standby per other client
	allowed := anyMove
	if len(tagKeys) > 0 {
		s.tagAwareStandbys(replicas, tagKeys, subIDs)
		allowed = s.sameTags
	} else {
		s.leastLoadedStandbys(replicas)
	}
	s.tree = nil // no later search uses it: stop keeping it up to date
	s.balance(kindStandby, allowed)
}

// leastLoadedStandbys is DefaultStandbyTaskAssignor.
func (s *state) leastLoadedStandbys(replicas int) {
	for t := int32(0); t < s.total; t++ {
		if s.stateful[t] {
			s.fillStandbys(t, replicas)
		}
	}
}

// fillStandbys gives task t up to n standbys on the least-loaded clients
// that do not hold it (pollClientAndMaybeAssignAndUpdateRemainingStandbyTasks);
// it returns how many it could not place.
func (s *state) fillStandbys(t int32, n int) int {
	for ; n > 0; n-- {
		c := s.leastLoadedWithout(t)
		if c < 0 {
			break
		}
		s.assignStandby(c, t)
	}
	return n
}

// sameTags is ClientTagAwareStandbyTaskAssignor.isAllowedTaskMovement: every
// tag of the source has the same value on the destination.
func (s *state) sameTags(src, dst int) bool {
	for _, kv := range s.clients[src].tags {
		if v, ok := s.clients[dst].tag(kv.Key); !ok || v != kv.Value {
			return false
		}
	}
	return true
}

// tagAwareStandbys is ClientTagAwareStandbyTaskAssignor.assign: for each
// stateful task, starting from the client holding the active, take the
// least-loaded client on no tag value used so far; a tag key stops
// constraining once as many clients are used as it has distinct values.
// Replicas it cannot place that way go to the least-loaded clients
// afterwards, in Kafka's HashMap order of the pending tasks.
func (s *state) tagAwareStandbys(replicas int, tagKeys []string, subIDs []string) {
	configured := map[string]bool{}
	for _, k := range tagKeys {
		configured[k] = true
	}
	values := map[string]map[string]bool{} // tag key -> distinct values over all clients
	for c := range s.clients {
		for _, kv := range s.clients[c].tags {
			if values[kv.Key] == nil {
				values[kv.Key] = map[string]bool{}
			}
			values[kv.Key][kv.Value] = true
		}
	}
	pending := map[int32]int{}
	for t := int32(0); t < s.total; t++ {
		if !s.stateful[t] {
			continue
		}
		for c := range s.clients {
			if s.clients[c].hasActive(t) {
				if left := s.standbysOnOtherTags(t, c, replicas, configured, values); left > 0 {
					pending[t] = left
				}
			}
		}
	}
	for _, t := range javaHashMapOrder(pending, s.statefulCount(), subIDs, s.locate) {
		s.fillStandbys(t, pending[t])
	}
}

func (s *state) standbysOnOtherTags(t int32, owner, replicas int, configured map[string]bool, values map[string]map[string]bool) int {
	used := map[[2]string]bool{} // tag entries (key, value) in use
	usedClients, left, last := 1, replicas, owner
	for {
		for _, kv := range s.clients[last].tags {
			if !configured[kv.Key] {
				continue
			}
			if len(values[kv.Key]) <= usedClients {
				for v := range values[kv.Key] {
					delete(used, [2]string{kv.Key, v})
				}
			} else {
				used[[2]string{kv.Key, kv.Value}] = true
			}
		}
		c := s.leastLoaded(func(c int) bool {
			return !s.clients[c].hasTask(t) && !s.onUsedTag(c, used)
		})
		if c < 0 {
			break
		}
		usedClients++
		left--
		s.assignStandby(c, t)
		last = c
		if left <= 0 {
			break
		}
	}
	return left
}

func (s *state) onUsedTag(c int, used map[[2]string]bool) bool {
	for _, kv := range s.clients[c].tags {
		if used[[2]string{kv.Key, kv.Value}] {
			return true
		}
	}
	return false
}

func (s *state) statefulCount() int {
	n := 0
	for _, st := range s.stateful {
		if st {
			n++
		}
	}
	return n
}

// javaHashMapOrder returns the keys of pending in the iteration order of
// the java.util.HashMap<TaskId, Integer> Kafka builds with Collectors.toMap
// over all `inserted` stateful tasks (in TaskId order) and then shrinks:
// ascending bucket, and insertion (task) order within a bucket. TaskId's
// hash is Objects.hash(subtopology, partition, null); a subtopology id that
// is not a decimal number hashes as its index. Tree bins (9+ tasks in one
// bucket) are not reproduced.
func javaHashMapOrder(pending map[int32]int, inserted int, subIDs []string, locate func(int32) (int32, int32)) []int32 {
	capacity := 16
	for inserted > capacity*3/4 {
		capacity <<= 1
	}
	type keyed struct {
		task   int32
		bucket uint32
	}
	keys := make([]keyed, 0, len(pending))
	for t := range pending {
		sub, part := locate(t)
		id := int32(sub)
		if n, err := strconv.ParseInt(subIDs[sub], 10, 32); err == nil {
			id = int32(n)
		}
		h := ((31+id)*31 + part) * 31
		spread := uint32(h) ^ (uint32(h) >> 16)
		keys = append(keys, keyed{t, spread & uint32(capacity-1)})
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].bucket != keys[j].bucket {
			return keys[i].bucket < keys[j].bucket
		}
		return keys[i].task < keys[j].task
	})
	out := make([]int32, len(keys))
	for i, k := range keys {
		out[i] = k.task
	}
	return out
}
