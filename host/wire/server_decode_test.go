package wire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestLargeFramesDecodeInSlots: a frame over 64 KiB is decoded only in a
// decoding slot, and while every slot is held a small request of another
// connection is still answered.
func TestLargeFramesDecodeInSlots(t *testing.T) {
	s, ln := groupServer(t, func(*Request) {})
	for range cap(s.decoding) {
		s.decoding <- struct{}{}
	}
	held := true
	t.Cleanup(func() { // before the Shutdown above (cleanups run last first)
		if held {
			for range cap(s.decoding) {
				<-s.decoding
			}
		}
	})
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType = "g", "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: make([]byte, 100<<10)}}
	big := dial(t, ln.Addr().String())
	big.send(join, 9, 1)

	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID = "g", "m"
	small := dial(t, ln.Addr().String())
	small.send(hb, 4, 1)
	if _, resp := small.recv(hb); resp.(*kmsg.HeartbeatResponse).ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("small request while the slots are held: %+v", resp)
	}
	big.c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	var ne net.Error
	if _, err := big.br.ReadByte(); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("the large request was answered (or its connection closed: %v) while every decoding slot was held", err)
	}
	for range cap(s.decoding) {
		<-s.decoding
	}
	held = false
	big.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, resp := big.recv(join); resp.(*kmsg.JoinGroupResponse).ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("large request once a slot is free: %+v", resp)
	}
}

// TestHandlerSeesDecodeTime: the group handler gets the time decoding
// the request's frame took (Request.Decode), which the coordinator
// charges to the group.
func TestHandlerSeesDecodeTime(t *testing.T) {
	decode := make(chan time.Duration, 1)
	_, ln := groupServer(t, func(req *Request) { decode <- req.Decode })
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType = "g", "consumer"
	for i := range 1000 {
		join.Protocols = append(join.Protocols, kmsg.JoinGroupRequestProtocol{Name: fmt.Sprint("p", i), Metadata: make([]byte, 100)})
	}
	c := dial(t, ln.Addr().String())
	c.send(join, 9, 1)
	c.recv(join)
	if d := <-decode; d <= 0 {
		t.Fatalf("the handler got a decoding time of %v for a join of 1,000 protocols", d)
	}
}

// groupServer is a server on a loopback listener whose group handler
// calls seen with each request and answers COORDINATOR_NOT_AVAILABLE.
func groupServer(t *testing.T, seen func(*Request)) (*Server, net.Listener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(ln, Config{Table: NewTable(kafka44), Group: func(_ context.Context, req *Request) (kmsg.Response, error) {
		seen(req)
		return ErrorResponse(req.Body, kerr.CoordinatorNotAvailable.Code), nil
	}})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	return s, ln
}

// TestHandlerSeesWireTime: the group handler gets the time the
// connection's goroutine spent on the group's request besides decoding
// it (Request.Wire): the answer to the group's request before it on the
// connection, encoded and written, counts with the next request of that
// group, and with no request of another group.
func TestHandlerSeesWireTime(t *testing.T) {
	c := &conn{}
	c.read, c.wrote, c.wroteFor = time.Microsecond, time.Millisecond, "g"
	join := func(group string) *Request {
		b := kmsg.NewPtrJoinGroupRequest()
		b.Group = group
		return &Request{Body: b}
	}
	if d := c.wireOf(GroupOf(join("g").Body)); d != time.Millisecond+time.Microsecond {
		t.Errorf("the next request of the group carries %v, want its read and the answer's write", d)
	}
	if d := c.wireOf(GroupOf(join("h").Body)); d != time.Microsecond {
		t.Errorf("a request of another group carries %v, want its read alone", d)
	}
	wire := make(chan time.Duration, 2)
	_, ln := groupServer(t, func(req *Request) { wire <- req.Wire })
	conn := dial(t, ln.Addr().String())
	for i := range 2 {
		body := join("g").Body
		conn.send(body, 9, int16(i+1))
		conn.recv(body)
	}
	<-wire
	if d := <-wire; d <= 0 {
		t.Fatalf("the group's second request on the connection got a wire time of %v", d)
	}
}
