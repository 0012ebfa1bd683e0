// Package loop is the event loop that owns the coordinators: it routes
// each group's requests to its partition's core, feeds core ticks,
// assignor results, topic metadata and end offsets, makes core's records
// durable before releasing responses, and forwards offsets to the data
// plane. The host root builds it (New) and serves it as the group
// coordinator.
package loop
