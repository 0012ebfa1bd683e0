// Package plugin runs task assignor and probing-policy plugins: WebAssembly
// modules loaded with wazero behind the ABI of package abi, sandboxed with
// memory limits and per-call deadlines, pooled, hot-reloadable and measured.
package plugin
