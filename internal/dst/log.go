package dst

import (
	"fmt"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host/runtime"
)

// crashLog sits between the runtime and the fault log. When the sim arms a
// crash for a partition's next append, that append either reaches the log
// (the batch is durable but the process dies before acknowledging it) or
// not (the batch is lost), and the process dies: the shard is marked dead,
// so the runtime's Rollback after the error releases nothing.
type crashLog struct {
	runtime.Log
	sim *sim
}

// crashMode is what an armed crash does to the append it interrupts.
type crashMode int

const (
	noCrash      crashMode = iota
	crashLost              // the batch never reaches the log
	crashDurable           // the batch is durable, its acknowledgement lost
)

func (l *crashLog) Append(p int, recs []runtime.Record) error {
	s := l.sim
	mode := s.crashAt[p]
	if mode == noCrash {
		return l.Log.Append(p, recs)
	}
	s.crashAt[p] = noCrash
	sh := s.shards[p]
	durable := false
	if mode == crashDurable {
		durable = l.Log.Append(p, recs) == nil
	}
	switch {
	case sh.piped:
		// The append holds the oldest sealed rounds (every earlier round
		// is committed: the simulation lets an append go only when the
		// runtime is quiescent); a durable one commits them, and the
		// rounds after them are undone.
		if durable {
			for n := 0; n < len(recs); {
				r := sh.psealed[0]
				sh.psealed = sh.psealed[1:]
				n += r.recs
				sh.c.CommitSealed()
				s.undelivered = append(s.undelivered, r.resp...)
			}
		}
		sh.c.Rollback()
	case durable:
		s.undelivered = append([]core.Response(nil), sh.resp...)
	default:
		sh.c.Rollback()
	}
	sh.crash, sh.dead = true, true
	s.pendingExpect[p] = sh.c.Dump()
	return fmt.Errorf("partition %d: process crashed during the append (durable=%v): %w", p, durable, runtime.ErrStorage)
}
