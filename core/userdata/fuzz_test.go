package userdata

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// Every decoder has a fuzz target seeded with the golden vectors of its kind.
// Properties: no panic; an error always wraps ErrMalformed; a decoded value
// re-encodes, and that encoding decodes to the same description (what
// survives decoding is what the encoder writes back).
//
//	go test ./core/userdata -run '^$' -fuzz FuzzDecodeSubscriptionInfo -fuzztime 20s

func seed(f *testing.F, kind string) {
	for _, g := range readGolden(f) {
		if g.kind == kind {
			f.Add(g.bytes)
		}
	}
}

func checkMalformed(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("decode error does not wrap ErrMalformed: %v", err)
	}
}

func FuzzDecodeSubscriptionInfo(f *testing.F) {
	seed(f, "sub")
	f.Add([]byte{0, 0, 0, 12, 0, 0, 0, 12}) // a future (version probing) member
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeSubscriptionInfo(b)
		if err != nil {
			checkMalformed(t, err)
			return
		}
		if s.IsFuture() {
			return // nothing past the two versions was read
		}
		out, err := s.Encode()
		if err != nil {
			// Only lossless-but-unencodable inputs may fail: Encode refuses
			// nothing a successful decode produces.
			t.Fatalf("re-encode of a decoded subscription: %v", err)
		}
		again, err := DecodeSubscriptionInfo(out)
		if err != nil {
			t.Fatalf("decode of our re-encoding: %v", err)
		}
		if a, b := describeSubscriptionInfo(s), describeSubscriptionInfo(again); a != b {
			t.Fatalf("re-encoding changed the value:\n %s\n %s", a, b)
		}
	})
}

func FuzzDecodeAssignmentInfo(f *testing.F) {
	seed(f, "asg")
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := DecodeAssignmentInfo(b)
		if err != nil {
			checkMalformed(t, err)
			return
		}
		out, err := a.Encode()
		if err != nil {
			t.Fatalf("re-encode of a decoded assignment: %v", err)
		}
		again, err := DecodeAssignmentInfo(out)
		if err != nil {
			t.Fatalf("decode of our re-encoding: %v", err)
		}
		if x, y := describeAssignmentInfo(a), describeAssignmentInfo(again); x != y {
			t.Fatalf("re-encoding changed the value:\n %s\n %s", x, y)
		}
	})
}

func FuzzDecodeSubscription(f *testing.F) {
	seed(f, "cps")
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeSubscription(b)
		if err != nil {
			checkMalformed(t, err)
			return
		}
		out, err := EncodeSubscription(m)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		again, err := DecodeSubscription(out)
		if err != nil {
			t.Fatalf("decode of our re-encoding: %v", err)
		}
		if !bytes.Equal(m.UserData, again.UserData) || (m.UserData == nil) != (again.UserData == nil) {
			t.Fatalf("user data changed: %x -> %x", m.UserData, again.UserData)
		}
	})
}

func FuzzDecodeAssignment(f *testing.F) {
	seed(f, "cpa")
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := DecodeAssignment(b)
		if err != nil {
			checkMalformed(t, err)
			return
		}
		out, err := EncodeAssignment(a)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		again, err := DecodeAssignment(out)
		if err != nil {
			t.Fatalf("decode of our re-encoding: %v", err)
		}
		_, x, _ := strings.Cut(describeAssignment(a), " ")
		_, y, _ := strings.Cut(describeAssignment(again), " ")
		if min(a.Version, ConsumerProtocolVersion) != again.Version || x != y {
			t.Fatalf("re-encoding changed the value:\n %s\n %s", x, y)
		}
	})
}
