package loop

import (
	"reflect"
	"testing"

	"github.com/coordhost/coordhost/core"
)

// TestSumPerTask: a task's end offset is the sum over its changelog
// partitions; a task missing any of them is unknown (-1), never partial.
func TestSumPerTask(t *testing.T) {
	t0, t1, t2 := core.TaskID{Subtopology: "0", Partition: 0}, core.TaskID{Subtopology: "0", Partition: 1}, core.TaskID{Subtopology: "1", Partition: 0}
	cls := []core.TaskChangelog{{Task: t0, Topic: "a", Partition: 0}, {Task: t0, Topic: "b", Partition: 0},
		{Task: t1, Topic: "a", Partition: 1}, {Task: t1, Topic: "b", Partition: 1}, {Task: t2, Topic: "c", Partition: 0}}
	offs := map[string]map[int32]int64{"a": {0: 10, 1: 7}, "b": {0: 5}, "c": {0: -1}}
	got := sumPerTask(cls, offs)
	want := []core.TaskEndOffset{{Task: t0, Offset: 15}, {Task: t1, Offset: -1}, {Task: t2, Offset: -1}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
