package gateway

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/wire"
)

// FuzzForwardFrame: the header parser and the body hint a frame is
// forwarded with never panic, and on every Produce or Fetch the full
// decoder accepts they agree with it: same header, same acks, timeout or
// maximum wait.
func FuzzForwardFrame(f *testing.F) {
	for _, v := range []int16{3, 8, 9, 11, 12} {
		p := produceReq(-1, "v")
		p.SetVersion(v)
		f.Add(frameOf(p, 5))
		p.Acks = 0
		f.Add(frameOf(p, 6))
	}
	for _, v := range []int16{4, 12, 14, 15, 17} {
		r := kmsg.NewPtrFetchRequest()
		r.SetVersion(v)
		r.MaxWaitMillis = 500
		f.Add(frameOf(r, 9))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		h, bodyAt, herr := wire.ParseHeader(frame)
		var hint forwardHint
		var ok bool
		if herr == nil {
			hint, ok = frameHint(h.Key, h.Version, frame[bodyAt:])
		}
		req, err := wire.ParseRequest(frame)
		if err != nil {
			return
		}
		if herr != nil || h.Key != req.Key || h.Version != req.Version || h.CorrelationID != req.CorrelationID || h.ClientIDString() != req.ClientIDString() {
			t.Fatalf("header %+v (%v), decoded %+v", h, herr, req)
		}
		switch b := req.Body.(type) {
		case *kmsg.ProduceRequest:
			if req.Version >= 3 && (!ok || hint.noResponse != (b.Acks == 0) || hint.waitMs != b.TimeoutMillis) {
				t.Fatalf("produce hint %+v (%v), decoded acks %d timeout %d", hint, ok, b.Acks, b.TimeoutMillis)
			}
		case *kmsg.FetchRequest:
			if !ok || hint.waitMs != b.MaxWaitMillis {
				t.Fatalf("fetch hint %+v (%v), decoded max wait %d", hint, ok, b.MaxWaitMillis)
			}
		}
	})
}
