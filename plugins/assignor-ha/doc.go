// Package ha is a KIP-441-style high-availability task assignor with warm-up
// tasks and a probing policy, working on the dense arrays of package abi. It
// is compiled to a WebAssembly plugin by its wasm sub-package and also serves
// as the host's native fallback.
package ha
