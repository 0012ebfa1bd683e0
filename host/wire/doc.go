// Package wire is coordhost's Kafka listener: framing, request headers,
// ApiVersions and one handler file per Kafka API key, on kmsg types.
package wire
