// Package sticky is Kafka 4.4's sticky task assignor for streams groups,
// working on the dense arrays of package abi. It is compiled to a WebAssembly
// plugin by its wasm sub-package and also serves as the host's native
// fallback and benchmark baseline.
package sticky
