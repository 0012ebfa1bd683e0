package records

import "unsafe"

// A Record holds its key and value in interfaces, and Go puts a struct
// into an interface by copying it into an allocation of its own: two
// allocations a record. A Decoder copies them into slabs instead, like
// the arrays and strings it cuts (wire.go): each record type's keys and
// values into slabs of boxSlabLen elements, each element handed out
// once and never written again, so a record stays as it was decoded
// whatever is decoded after it, and a slab lives as long as any record
// that points into it.

// boxSlabLen is the element count of a new slab of keys or values.
const boxSlabLen = 64

// boxSlab is one record type's keys (or values) of type T, as interfaces
// of type I.
type boxSlab[T any, I any] struct {
	free  []T // elements not handed out yet
	proto I   // an I holding a T, boxed by Go: its type word is every box's
}

// boxKey returns k as a RecordKey, its struct in the Decoder's slab
// when r is a Decoder's key reader.
func boxKey[T RecordKey](r *reader, k T) RecordKey {
	if r.ids == nil || r.err != nil {
		return k
	}
	return box(&r.ids.slab.boxes[2*boxSlot(k.RecordType())], k, func(k T) RecordKey { return k })
}

// boxValue returns v as a RecordValue, its struct in the Decoder's slab
// when r is a Decoder's value reader.
func boxValue[T RecordValue](r *reader, v T) RecordValue {
	if r.slab == nil || r.err != nil {
		return v
	}
	return box(&r.slab.boxes[2*boxSlot(v.RecordType())+1], v, func(v T) RecordValue { return v })
}

// boxSlot is the slot of record type t's slabs (0 for a type outside
// the table, which never reaches here: decode looks the type up first).
func boxSlot(t int16) int {
	if t < 0 || int(t) >= typeSlots {
		return 0
	}
	return int(t)
}

// box returns v as an I whose value is an element of the slab in slot.
// The first v of a slot is boxed by Go (conv) and kept as the slot's
// proto; later ones are copied into the slab and given the proto's type
// word. A T that Go holds in the interface word itself (a pointer-sized
// or empty type) is always boxed by Go.
func box[T any, I any](slot *any, v T, conv func(T) I) I {
	if unsafe.Sizeof(v) <= unsafe.Sizeof(uintptr(0)) {
		return conv(v)
	}
	b, _ := (*slot).(*boxSlab[T, I])
	if b == nil {
		b = &boxSlab[T, I]{proto: conv(v)}
		*slot = b
		return b.proto
	}
	if len(b.free) == 0 {
		b.free = make([]T, boxSlabLen)
	}
	p := &b.free[0]
	b.free = b.free[1:]
	*p = v
	out := b.proto
	// An interface is two words, its type and a pointer to its value
	// (runtime.iface): out keeps the proto's type, and points at *p.
	(*[2]unsafe.Pointer)(unsafe.Pointer(&out))[1] = unsafe.Pointer(p)
	return out
}
