package wire

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// GroupQuota is the group coordinator's per-group quota, as the listener
// applies it to a group's request before reading it (screen).
type GroupQuota interface {
	// GroupThrottle is how long group's requests should wait (its
	// throttle_time_ms): 0 unless the group is over its quota.
	GroupThrottle(group string) time.Duration
}

// refusalThrottle is the throttle_time_ms of an answer screen gives
// without reading the request, for which its connection is not read: as
// long as the longest throttle of a group's quota by default
// (runtime.DefaultMaxThrottle). A valid client never sends such a
// request; one that does cannot have its connection read and refused at
// the speed it writes.
const refusalThrottle = time.Second

// screen looks at the start of a frame of n bytes, still in the
// connection's read buffer, before any of it is allocated, granted
// request budget or decoded (docs/RATIONALE.md, "Why look at a frame
// before reading it?"):
//
//   - a key kmsg does not know, or a version newer than it decodes (but
//     for ApiVersions, which is answered), returns the error that closes
//     the connection, as the full parse would after reading the frame;
//   - a group request whose body starts with its group id, of any size,
//     waits, without being read, decoded or stepped, while its group is
//     over its quota (Config.Quota), however many connections the group
//     uses — unless its connection is shared with other groups
//     (groupsSeen), whose requests would wait behind it; once the group
//     is back under its quota it is read and served as usual;
//   - such a StreamsGroupHeartbeat over smallFrame whose topology has more
//     subtopologies than its group's streams.max.topology.size is then
//     read past without being kept and returned with its answer,
//     INVALID_REQUEST, which the group coordinator would give after
//     decoding it, with a throttle of refusalThrottle.
//
// Anything else returns a nil refusal: the frame is read and served as
// usual, with the header screen parsed to find the group id, if it did
// (h.req non-nil), so that the header is parsed once.
func (c *conn) screen(ctx context.Context, br *bufio.Reader, n int32) (*refusal, head, error) {
	peeked, _ := br.Peek(int(min(n, 4)))
	if len(peeked) < 4 {
		return nil, head{}, nil // the full parse reports a short frame
	}
	key, ver := int16(binary.BigEndian.Uint16(peeked)), int16(binary.BigEndian.Uint16(peeked[2:]))
	newest, known := maxRequestVersion(key)
	switch {
	case !known:
		return nil, head{}, fmt.Errorf("%w %d (version %d)", ErrUnknownKey, key, ver)
	case (ver < 0 || ver > newest) && key != int16(kmsg.ApiVersions):
		return nil, head{}, fmt.Errorf("%w: %s v%d (kmsg decodes up to v%d)", ErrUndecodableVersion, kmsg.NameForKey(key), ver, newest)
	case !groupFirst(key) || n <= smallFrame && c.s.cfg.Quota == nil:
		return nil, head{}, nil
	}
	if !c.s.cfg.Table.Routes(key, ver, RouteGroup) {
		return nil, head{}, nil
	}
	prefix, _ := br.Peek(min(int(n), br.Size()))
	h, peekedGroup, r, ok := groupAhead(prefix, c.keepClientID)
	if !ok {
		return nil, head{}, nil
	}
	group := c.groups.note(peekedGroup)
	if !c.groups.sharedNow() {
		c.waitQuota(ctx, group)
	}
	if n <= smallFrame || key != int16(kmsg.StreamsGroupHeartbeat) || c.s.cfg.MaxTopologySize == nil {
		return nil, h, nil
	}
	refused, err := c.refuseTopology(br, n, h, prefix, r, group)
	if refused != nil || err != nil {
		return refused, head{}, err
	}
	return nil, h, nil
}

// refuseTopology is screen's answer to a StreamsGroupHeartbeat of n bytes,
// over smallFrame, whose header is h and whose start prefix is read up to
// r, after its group id: when its topology has more subtopologies than
// its group's streams.max.topology.size, the frame is read past and
// refused INVALID_REQUEST; otherwise nil, nil.
func (c *conn) refuseTopology(br *bufio.Reader, n int32, h head, prefix []byte, r kbin.Reader, group string) (*refusal, error) {
	req, ver := h.req, h.req.Version
	subtopologies, ok := topologyAhead(&r, int(n)-(len(prefix)-len(r.Src)))
	limit := c.s.cfg.MaxTopologySize(group)
	if !ok || subtopologies <= int(limit) {
		return nil, nil
	}
	if err := c.skipFrame(br, int64(n)); err != nil {
		return nil, fmt.Errorf("reading %d-byte frame: %w", n, err)
	}
	resp := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	resp.Version, resp.ErrorCode = ver, kerr.InvalidRequest.Code
	msg := fmt.Sprintf("The topology has at least %d entries (subtopologies, topics and copartition-group entries), more than streams.max.topology.size %d.",
		subtopologies, limit)
	resp.ErrorMessage, resp.ThrottleMillis = &msg, int32(refusalThrottle.Milliseconds())
	req.Body = h.body
	return &refusal{req: req, resp: resp}, nil
}

// keepClientID is screen's keep of a header's client id (parseHeaderKeeping):
// the client id of the connection's last such request when it is the same,
// as a client sends the same one on every request, else a copy.
func (c *conn) keepClientID(id []byte) *string {
	if c.lastClientID == nil || *c.lastClientID != string(id) {
		c.lastClientID = cloneClientID(id)
	}
	return c.lastClientID
}

// requestMaxVersions holds, by key, the newest version of each request kmsg
// decodes, -1 for a key it does not know: screen checks a frame's version
// from its first bytes without building a request.
var requestMaxVersions = func() (v [kmsg.MaxKey + 1]int16) {
	for k := range v {
		v[k] = -1
		if r := kmsg.RequestForKey(int16(k)); r != nil {
			v[k] = r.MaxVersion()
		}
	}
	return v
}()

// maxRequestVersion returns the newest version of key kmsg decodes, and
// whether it knows key at all.
func maxRequestVersion(key int16) (int16, bool) {
	if key < 0 || int(key) >= len(requestMaxVersions) || requestMaxVersions[key] < 0 {
		return 0, false
	}
	return requestMaxVersions[key], true
}

// waitQuota waits while group is over its quota (Config.Quota), unless
// the server stops meanwhile.
func (c *conn) waitQuota(ctx context.Context, group string) {
	q := c.s.cfg.Quota
	if q == nil {
		return
	}
	for d := q.GroupThrottle(group); d > 0 && ctx.Err() == nil && !c.s.isDraining(); d = q.GroupThrottle(group) {
		c.mute(ctx, d)
	}
}

// refusal is a request screen answered without reading its frame into
// memory: its header (Body an empty request of its key and version) and
// its response.
type refusal struct {
	req  *Request
	resp kmsg.Response
}

// groupFirst reports whether key is a group-coordination request whose
// body starts with the group id (in every version the table serves).
func groupFirst(key int16) bool {
	switch kmsg.Key(key) {
	case kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Heartbeat, kmsg.LeaveGroup,
		kmsg.OffsetCommit, kmsg.ConsumerGroupHeartbeat, kmsg.StreamsGroupHeartbeat:
		return true
	}
	return false
}

// head is a request's header as parsed from the start of its frame, before
// the frame is read: the header (Body nil), an empty body of its key set to
// its version, and the header's length in bytes.
type head struct {
	req  *Request
	body kmsg.Request
	size int
}

// groupAhead parses, from prefix, the first bytes of a frame, its header
// and the group id its body starts with (a key of groupFirst). r is left
// at the field after the group id. The group id aliases prefix: it is
// valid only until the buffer prefix is in is read again. ok is false when
// prefix is not such a request or ends before the group id: the frame is
// then served as usual. It never panics on any input.
func groupAhead(prefix []byte, keep func([]byte) *string) (h head, group string, r kbin.Reader, ok bool) {
	req, body, rest, err := parseHeaderKeeping(prefix, keep)
	if err != nil || !groupFirst(req.Key) {
		return head{}, "", r, false
	}
	r = kbin.Reader{Src: rest}
	if body.IsFlexible() {
		group = r.UnsafeCompactString()
	} else {
		group = r.UnsafeString()
	}
	if !r.Ok() || len(group) > MaxStringLen {
		return head{}, "", r, false
	}
	return head{req: req, body: body, size: len(prefix) - len(rest)}, group, r, true
}

// topologyAhead reads, from r at a StreamsGroupHeartbeat's member id, the
// body up to the length of its topology's subtopology array, of a body
// with left bytes after r's position. ok is false when r ends before the
// length, the heartbeat has no topology, or kmsg would find the frame
// malformed at that point. It never panics on any input.
func topologyAhead(r *kbin.Reader, left int) (subtopologies int, ok bool) {
	start := len(r.Src)
	if member := r.CompactString(); len(member) > MaxStringLen {
		return 0, false
	}
	r.Int32()     // member epoch
	r.Int32()     // endpoint information epoch
	for range 2 { // instance id, rack id
		if s := r.CompactNullableString(); s != nil && len(*s) > MaxStringLen {
			return 0, false
		}
	}
	r.Int32()           // rebalance timeout
	if r.Int8() == -1 { // no topology
		return 0, false
	}
	r.Int32() // topology epoch
	l := int64(r.Uvarint()) - 1
	// kmsg refuses an array of more elements than an eighth of the bytes
	// left: such a frame is malformed, which the full parse reports.
	if !r.Ok() || l <= 0 || l*8 > int64(left-(start-len(r.Src))) {
		return 0, false
	}
	return int(l), true
}

// parse decodes frame, whose header h holds when screen parsed it from the
// frame's first bytes: the header is then not parsed a second time.
func (h head) parse(frame []byte) (*Request, error) {
	if h.req == nil || h.size > len(frame) {
		return ParseRequest(frame)
	}
	return parseBody(h.req, h.body, frame[h.size:], len(frame))
}
