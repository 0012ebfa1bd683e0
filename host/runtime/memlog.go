package runtime

import (
	"bytes"
	"fmt"
	"sync"
)

// MemLog is a Log in memory: for tests and for runs that need no
// durability. Its zero value is not usable; use NewMemLog.
type MemLog struct {
	mu    sync.Mutex
	parts map[int][]Record
	// MaxKey bounds keys (bytes; 0: no bound), to mirror a disk backend.
	MaxKey int
}

// NewMemLog returns an empty in-memory log.
func NewMemLog() *MemLog { return &MemLog{parts: map[int][]Record{}} }

// Validate implements Log.
func (m *MemLog) Validate(r Record) error { return LimitsError(r, m.MaxKey, 0) }

// Append implements Log: it keeps copies of recs.
func (m *MemLog) Append(p int, recs []Record) error {
	for i, r := range recs {
		if err := m.Validate(r); err != nil {
			return fmt.Errorf("record %d: %w", i, err)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range recs {
		m.parts[p] = append(m.parts[p], Record{Key: bytes.Clone(r.Key), Value: cloneValue(r.Value)})
	}
	return nil
}

func cloneValue(v []byte) []byte {
	if v == nil {
		return nil
	}
	return append([]byte{}, v...)
}

// Replay implements Log: the records as appended (not compacted).
func (m *MemLog) Replay(p int, fn func(Record) error) error {
	m.mu.Lock()
	recs := append([]Record(nil), m.parts[p]...)
	m.mu.Unlock()
	for _, r := range recs {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// Compact implements Log: the latest value of each key, in the order of
// those writes; tombstones go.
func (m *MemLog) Compact(p int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.parts[p] = Compacted(m.parts[p])
	return nil
}

// Len returns the number of records in partition p's log.
func (m *MemLog) Len(p int) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.parts[p])
}

// Compacted returns the compacted form of recs: the latest value of each
// key in the order of those last writes, without tombstones — what a
// compacted Kafka topic or the bbolt store replays.
func Compacted(recs []Record) []Record {
	last := map[string]int{}
	for i, r := range recs {
		last[string(r.Key)] = i
	}
	var out []Record
	for i, r := range recs {
		if last[string(r.Key)] == i && r.Value != nil {
			out = append(out, r)
		}
	}
	return out
}
