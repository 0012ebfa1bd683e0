package wire

import (
	"bytes"
	"io"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestWriteResponseReusesBoundedBuffer: responses written one after the
// other on a connection are each framed exactly as AppendResponse frames
// them alone, though they share the connection's buffer; a response over
// keptWriteBuffer is written whole and its buffer is not kept.
func TestWriteResponseReusesBoundedBuffer(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	c := &conn{s: &Server{cfg: Config{WriteTimeout: 1 << 62}}, nc: server}
	small := func() kmsg.Response {
		r := kmsg.NewPtrHeartbeatResponse()
		r.Version = 4
		return r
	}
	big := kmsg.NewPtrDescribeGroupsResponse()
	big.Version = 5
	g := kmsg.NewDescribeGroupsResponseGroup()
	g.Group = string(bytes.Repeat([]byte("g"), 2*keptWriteBuffer))
	big.Groups = append(big.Groups, g)
	resps := []kmsg.Response{small(), big, small(), small()}

	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(client)
		got <- b
	}()
	var want []byte
	for i, r := range resps {
		want = AppendResponse(want, int32(i), r)
		if err := c.writeResponse(int32(i), r); err != nil {
			t.Fatal(err)
		}
		if cap(c.wbuf) > keptWriteBuffer {
			t.Fatalf("after response %d the connection keeps a %d-byte buffer", i, cap(c.wbuf))
		}
		if i == 0 && c.wbuf == nil {
			t.Fatal("a small response's buffer was not kept")
		}
	}
	server.Close()
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("written %d bytes differ from the %d framed one by one", len(b), len(want))
	}
}
