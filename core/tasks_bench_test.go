package core

import (
	"fmt"
	"testing"
)

// BenchmarkGroupTasks is groupTasks of a sorted target: "spread" is 16
// tasks of 16 subtopologies each (a member of a group whose topology has
// many subtopologies, the flood tests' joins), "deep" 16 partitions of one
// subtopology. A large group's target write runs it once per member.
func BenchmarkGroupTasks(b *testing.B) {
	for _, cs := range []struct {
		name       string
		subs, part int
	}{{"spread", 16, 1}, {"deep", 1, 16}} {
		var sorted []TaskID
		for s := 0; s < cs.subs; s++ {
			for p := 0; p < cs.part; p++ {
				sorted = append(sorted, TaskID{Subtopology: fmt.Sprint(s + 10), Partition: int32(p)})
			}
		}
		b.Run(cs.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				groupTasks(sorted, nil)
			}
		})
	}
}
