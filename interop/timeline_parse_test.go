package interop

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestTimelineFromLogs checks the hand-over timeline's reading of a Kafka
// Streams log and coordhost's: task 0_1 moves from app0's thread to
// app1's during the step, and every stretch lands where its line says.
func TestTimelineFromLogs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("app0-classic-1.log", `12:00:00.100 INFO  [app0-classic-1-StreamThread-1] StreamTask: stream-thread [app0-classic-1-StreamThread-1] task [0_1] Suspended from RUNNING
`)
	write("app1-classic-1.log", `12:00:00.900 INFO  [app1-classic-1-StreamThread-1] TaskManager: stream-thread [app1-classic-1-StreamThread-1] Handle new assignment with:
	New active tasks: [0_1, 0_2]
	New standby tasks: [0_0]
	Existing active tasks: [0_2]
	Existing standby tasks: [0_1]
12:00:01.500 INFO  [app1-classic-1-StreamThread-1] StreamTask: stream-thread [app1-classic-1-StreamThread-1] task [0_1] Restored and ready to run
`)
	day := time.Date(2026, 12, 3, 12, 0, 0, 0, time.Local)
	utc := func(ms int) string {
		return day.Add(time.Duration(ms) * time.Millisecond).UTC().Format("2006-01-02T15:04:05.000Z")
	}
	write("coordhost.log", `time=`+utc(200)+` level=INFO msg="group event" component=loop group=g event="member app0-classic-1-StreamThread-1-consumer-1 left (leave)"
time=`+utc(250)+` level=INFO msg="group event" component=loop group=other event="target assignment installed at epoch 3"
time=`+utc(300)+` level=INFO msg="group event" component=loop group=g event="target assignment installed at epoch 9"
time=`+utc(700)+` level=DEBUG msg="streams member assignment" component=loop group=g member=app1-classic-1-StreamThread-1-consumer-2 epoch=9 state=1 active="0_1 0_2" standby=0_0 warmup="" revoking=""
`)
	st := []step{{scenario: "s", phase: "plain", start: day, end: day.Add(time.Minute), firstOutMs: []int64{0, day.Add(2 * time.Second).UnixMilli()}}}
	ms, err := stepTimeline(dir, "g", st)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 {
		t.Fatalf("%d moves, want 1 (0_1 only): %+v", len(ms), ms)
	}
	m := ms[0]
	want := []struct {
		name      string
		got, want time.Duration
	}{
		{"suspended", m.suspended, 100 * time.Millisecond},
		{"left", m.left, 200 * time.Millisecond},
		{"target", m.target, 300 * time.Millisecond},
		{"delivered", m.delivered, 700 * time.Millisecond},
		{"assigned", m.assigned, 900 * time.Millisecond},
		{"running", m.running, 1500 * time.Millisecond},
		{"first output", m.firstOut, 2 * time.Second},
	}
	for _, w := range want {
		if w.got != w.want {
			t.Errorf("%s at %v, want %v", w.name, w.got, w.want)
		}
	}
	if !m.byLeave {
		t.Errorf("the move followed the first target after the leave, yet is not counted as caused by it")
	}
	if m.from != "app0-classic-1-StreamThread-1" || m.to != "app1-classic-1-StreamThread-1" {
		t.Errorf("move %s → %s", m.from, m.to)
	}
}
