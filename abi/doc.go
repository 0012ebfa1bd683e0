// Package abi is coordhost's stable, versioned plugin ABI: the types exchanged
// with task assignor, probing-policy and partition-assignor plugins and
// their compact binary codec, shared by the host and by guests compiled to WebAssembly.
//
// abi imports the standard library only, because it is compiled into every
// plugin. The contract itself is written down in SPEC.md beside this file.
package abi
