// Package dst is coordhost's deterministic simulation test: from one seed it
// runs several groups — streams, classic, KIP-848 consumer, and a mixed
// group that converts between classic and streams online — on the real
// partition runtime (host/runtime) over a fault-injecting record log, with
// simulated clients that misbehave, holds a partition's appends while
// later rounds are stepped (pipelined rounds), crashes the coordinator at
// random points, restarts it from its log and checks invariants on the
// coordinator's own state and responses after every step.
// docs/RELIABILITY.md ("Deterministic simulation") describes what it covers
// and how to run or reproduce a seed.
package dst
