package abi_test

import (
	"testing"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/abitest"
)

// BenchmarkDecodeAssignRequest: decoding 100 members x 1,000 tasks with
// history and offsets (the guest's first step on every call).
func BenchmarkDecodeAssignRequest(b *testing.B) {
	in, _ := abi.AppendAssignRequest(nil, abitest.Generate(abitest.Shape{Members: 100, Processes: 50,
		Subtopologies: 10, Partitions: 100, History: 90, Offsets: true, RandomIDs: true, Seed: 1}))
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		var r abi.AssignRequest
		if err := abi.DecodeAssignRequest(in, &r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecoderReuse: the same decode with a reused Decoder (what the
// guest SDK does).
func BenchmarkDecoderReuse(b *testing.B) {
	in, _ := abi.AppendAssignRequest(nil, abitest.Generate(abitest.Shape{Members: 100, Processes: 50,
		Subtopologies: 10, Partitions: 100, History: 90, Offsets: true, RandomIDs: true, Seed: 1}))
	b.SetBytes(int64(len(in)))
	var d abi.Decoder
	var r abi.AssignRequest
	for b.Loop() {
		if err := d.DecodeAssignRequest(in, &r); err != nil {
			b.Fatal(err)
		}
	}
}
