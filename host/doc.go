// Package host is the shell around core: the event loop that owns the
// coordinator, feeds it requests, ticks and assignor results, makes its
// records durable before releasing responses, and runs plugins, the Kafka
// listener and the data plane.
package host
