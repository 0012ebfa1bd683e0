// Package host composes a running coordhost server: it opens the store and
// the data plane, builds the event loop (host/loop) and the authorization
// in front of it, and starts the Kafka listeners and the admin server.
package host
