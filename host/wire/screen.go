package wire

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// screen looks at the start of a frame of n bytes, still in the
// connection's read buffer, before any of it is allocated, granted
// request budget or decoded (docs/RATIONALE.md, "Why look at a frame
// before reading it?"):
//
//   - a key kmsg does not know, or a version newer than it decodes (but
//     for ApiVersions, which is answered), returns the error that closes
//     the connection, as the full parse would after reading the frame;
//   - a StreamsGroupHeartbeat over smallFrame whose topology has more
//     subtopologies than Config.MaxTopologySize is read past without
//     being kept and returned with its answer, INVALID_REQUEST, which the
//     group coordinator would give after decoding it.
//
// Anything else returns nil, nil: the frame is read and served as usual.
func (c *conn) screen(br *bufio.Reader, n int32) (*refusal, error) {
	head, _ := br.Peek(int(min(n, 4)))
	if len(head) < 4 {
		return nil, nil // the full parse reports a short frame
	}
	key, ver := int16(binary.BigEndian.Uint16(head)), int16(binary.BigEndian.Uint16(head[2:]))
	body := kmsg.RequestForKey(key)
	switch {
	case body == nil:
		return nil, fmt.Errorf("%w %d (version %d)", ErrUnknownKey, key, ver)
	case (ver < 0 || ver > body.MaxVersion()) && key != int16(kmsg.ApiVersions):
		return nil, fmt.Errorf("%w: %s v%d (kmsg decodes up to v%d)", ErrUndecodableVersion, kmsg.NameForKey(key), ver, body.MaxVersion())
	case key != int16(kmsg.StreamsGroupHeartbeat) || n <= smallFrame || c.s.cfg.MaxTopologySize == nil:
		return nil, nil
	}
	if e, ok := c.s.cfg.Table.Lookup(key); !ok || e.Route != RouteGroup || ver < e.Min || ver > e.Max {
		return nil, nil
	}
	prefix, _ := br.Peek(min(int(n), br.Size()))
	req, group, subtopologies, ok := topologyAhead(prefix, int(n))
	if !ok {
		return nil, nil
	}
	limit := c.s.cfg.MaxTopologySize(group)
	if subtopologies <= int(limit) {
		return nil, nil
	}
	if _, err := io.CopyN(io.Discard, br, int64(n)); err != nil {
		return nil, fmt.Errorf("reading %d-byte frame: %w", n, err)
	}
	resp := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	resp.Version, resp.ErrorCode = ver, kerr.InvalidRequest.Code
	msg := fmt.Sprintf("The topology has at least %d entries (subtopologies, topics and copartition-group entries), more than streams.max.topology.size %d.",
		subtopologies, limit)
	resp.ErrorMessage = &msg
	return &refusal{req: req, resp: resp}, nil
}

// refusal is a request screen answered without reading its frame into
// memory: its header (Body an empty request of its key and version) and
// its response.
type refusal struct {
	req  *Request
	resp kmsg.Response
}

// topologyAhead parses a StreamsGroupHeartbeat frame's header and its body
// up to the length of the topology's subtopology array, from prefix, the
// first bytes of a frame of n bytes: the header, the group id and the array's length.
// ok is false when prefix is not such a request with
// a topology, or ends before the array's length: the frame is then served
// as usual. It never panics on any input.
func topologyAhead(prefix []byte, n int) (req *Request, group string, subtopologies int, ok bool) {
	req, body, rest, err := parseHeader(prefix)
	if err != nil || body.Key() != int16(kmsg.StreamsGroupHeartbeat) {
		return nil, "", 0, false
	}
	r := kbin.Reader{Src: rest}
	group = r.CompactString()
	if member := r.CompactString(); len(group) > MaxStringLen || len(member) > MaxStringLen {
		return nil, "", 0, false
	}
	r.Int32()     // member epoch
	r.Int32()     // endpoint information epoch
	for range 2 { // instance id, rack id
		if s := r.CompactNullableString(); s != nil && len(*s) > MaxStringLen {
			return nil, "", 0, false
		}
	}
	r.Int32()           // rebalance timeout
	if r.Int8() == -1 { // no topology
		return nil, "", 0, false
	}
	r.Int32() // topology epoch
	l := int64(r.Uvarint()) - 1
	// kmsg refuses an array of more elements than an eighth of the bytes
	// left: such a frame is malformed, which the full parse reports.
	if left := int64(n) - int64(len(prefix)-len(r.Src)); !r.Ok() || l <= 0 || l*8 > left {
		return nil, "", 0, false
	}
	req.Body = body
	return req, group, int(l), true
}
