// Package gateway connects coordhost to its data plane, an embedded in-process
// cluster or an existing Kafka cluster, and forwards every request that is not
// group coordination, rewriting broker addresses to coordhost's listeners.
package gateway
