// Package interop holds the real-client interop suite: Kafka
// Streams 4.4 applications, Kafka's own group tools and a real Apache Kafka
// 4.4 broker driven from Go tests over loopback. The Java side lives in
// interop/streams-app; docs/INTEROP.md says how to run it and keeps the
// measured results.
//
// The tests are slow (minutes) and start several JVMs, so they run only when
// COORDHOST_INTEROP=1; CI runs them in a separate serial step.
package interop
