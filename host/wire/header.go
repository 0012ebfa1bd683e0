package wire

import (
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Errors ParseRequest wraps; test with errors.Is.
var (
	// ErrMalformed: the frame is not a well-formed request of its key and version.
	ErrMalformed = errors.New("malformed request")
	// ErrUnknownKey: the API key is not one kmsg (Kafka 4.4) knows.
	ErrUnknownKey = errors.New("unknown API key")
	// ErrUndecodableVersion: the key is known but its version is newer than
	// any kmsg can decode, so neither the body nor a response can be encoded.
	ErrUndecodableVersion = errors.New("undecodable API version")
)

// Request is one decoded client request: header fields and body.
type Request struct {
	Key           int16
	Version       int16
	CorrelationID int32
	// ClientID is the header's nullable client id.
	ClientID *string
	// Body is the decoded request, with its version set.
	Body kmsg.Request
	// Listener is the coordhost listener (as advertised) the request came
	// in on: what FindCoordinator for a group answers.
	Listener Broker
	// ClientHost is the client's host as Kafka records it for member
	// descriptions and member records: "/" and the IP, without the
	// connection's port (see javaHost), so a reconnect changes nothing.
	ClientHost string
	// Authenticated is true once the data plane accepted a
	// SaslAuthenticate on this connection (SASL passes through).
	Authenticated bool
	// SASLUser is the user name the connection's accepted SASL
	// authentication claimed ("" when unknown): for logs, not decisions.
	SASLUser string
	// AuthGeneration counts the connection's accepted SASL
	// authentications (0: none); a re-authentication starts a new one, so
	// nothing decided under an older generation is reused.
	AuthGeneration uint64
	// CertPrincipal is the principal of the client's verified TLS
	// certificate as Kafka's default principal builder names it ("" without
	// one; see CertPrincipal); the principal authorized only when
	// CertAuthenticated.
	CertPrincipal string
	// CertAuthenticated is true when the connection is authenticated as
	// CertPrincipal (Config.CertLogin), which is then the principal
	// authorized.
	CertAuthenticated bool
	// Decode is how long decoding the request's frame took on its
	// connection's goroutine (not the wait for a decoding slot): the
	// request's cost before any handler sees it, which the group
	// coordinator counts towards the group's quota.
	Decode time.Duration
	// Wire is the rest of the group's request work on its connection's
	// goroutine, which the group coordinator counts towards the group's
	// quota with Decode: copying the frame's body in when it had
	// arrived whole (a read that may wait for the client's bytes is not
	// counted), and encoding and writing the response to the request
	// before it on the connection, when that request was of the same
	// group (its write ends after the coordinator saw it).
	Wire time.Duration
	// SharedConn is true when the request came on a connection that
	// carried requests of several groups lately (groupsSeen): a group's
	// quota must not hold it back, or it would hold theirs too.
	SharedConn bool
	// Session is the connection's own link to the data plane, as the
	// client's pass-through SASL authenticated it; nil when the listener
	// has no data plane. It may be used only while the request is handled.
	Session Session
}

// Broker is a node address as clients see it.
type Broker struct {
	NodeID int32
	Host   string
	Port   int32
}

// ClientIDString returns the client id, or "" when it is null.
func (r *Request) ClientIDString() string {
	if r.ClientID == nil {
		return ""
	}
	return *r.ClientID
}

// ParseRequest decodes one frame (without its length prefix): request header
// v1 or v2 (flexible versions, tagged fields skipped) and body. On
// ErrUndecodableVersion the returned Request carries the header without a
// body. It never panics on any input.
func ParseRequest(frame []byte) (*Request, error) {
	req, body, rest, err := parseHeader(frame)
	if err != nil {
		return req, err
	}
	return parseBody(req, body, rest, len(frame))
}

// parseBody decodes rest, the body of a frame of frameLen bytes whose header
// is req, into body (an empty request of req's key and version), and
// returns req with it. Its errors are ParseRequest's.
func parseBody(req *Request, body kmsg.Request, rest []byte, frameLen int) (*Request, error) {
	key, ver := req.Key, req.Version
	if err := body.ReadFrom(rest); err != nil {
		return nil, fmt.Errorf("%w: %s v%d body: %v", ErrMalformed, kmsg.NameForKey(key), ver, err)
	}
	// Only a compact string (flexible versions) can be longer than Kafka's
	// string limit, and only in a frame longer than the limit.
	if body.IsFlexible() && frameLen > MaxStringLen {
		if n := longestString(reflect.ValueOf(body)); n > MaxStringLen {
			return nil, fmt.Errorf("%w: %s v%d: a string of %d bytes (Kafka's maximum is %d)", ErrMalformed, kmsg.NameForKey(key), ver, n, MaxStringLen)
		}
	}
	req.Body = body
	return req, nil
}

// AppendResponse appends the framed response to corr (size, correlation id,
// header tags when flexible except for ApiVersions, body) to dst.
func AppendResponse(dst []byte, corr int32, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = kbin.AppendInt32(dst, corr)
	if resp.IsFlexible() && resp.Key() != int16(kmsg.ApiVersions) {
		dst = append(dst, 0) // response header v1: empty tagged fields
	}
	dst = resp.AppendTo(dst)
	size := uint32(len(dst) - start - 4)
	dst[start], dst[start+1], dst[start+2], dst[start+3] = byte(size>>24), byte(size>>16), byte(size>>8), byte(size)
	return dst
}

// ParseResponse decodes a response frame (without length prefix) to a
// request of key/version. It returns the correlation id and the response.
func ParseResponse(frame []byte, req kmsg.Request) (int32, kmsg.Response, error) {
	r := kbin.Reader{Src: frame}
	corr := r.Int32()
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && resp.Key() != int16(kmsg.ApiVersions) {
		kmsg.SkipTags(&r)
	}
	if err := r.Complete(); err != nil {
		return corr, nil, fmt.Errorf("%w: response header: %v", ErrMalformed, err)
	}
	if err := resp.ReadFrom(r.Src); err != nil {
		return corr, nil, fmt.Errorf("%w: %s v%d response: %v", ErrMalformed, kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return corr, resp, nil
}

// MaxStringLen is the longest string field Kafka's request parsing accepts
// (0x7fff bytes); a longer one fails the request, and Kafka closes the
// connection.
const MaxStringLen = 0x7fff

// longestString is the length of the longest string (or *string) anywhere
// in v: request fields, nested structs and arrays. Byte slices (records,
// metadata) are not strings and are skipped.
func longestString(v reflect.Value) int {
	switch v.Kind() {
	case reflect.String:
		return v.Len()
	case reflect.Pointer:
		if v.IsNil() {
			return 0
		}
		return longestString(v.Elem())
	case reflect.Struct:
		longest := 0
		for i := 0; i < v.NumField(); i++ {
			longest = max(longest, longestString(v.Field(i)))
		}
		return longest
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return 0
		}
		longest := 0
		for i := 0; i < v.Len(); i++ {
			longest = max(longest, longestString(v.Index(i)))
		}
		return longest
	default:
		return 0
	}
}

// parseHeader parses a request header: api key, version, correlation id,
// client id and, for flexible versions, the header's tagged fields. It
// returns the header, an empty body of the request's key set to its
// version, and the bytes of the body. Its errors are ParseRequest's; on
// ErrUnknownKey and ErrUndecodableVersion the header is returned too.
func parseHeader(frame []byte) (req *Request, body kmsg.Request, rest []byte, err error) {
	return parseHeaderKeeping(frame, cloneClientID)
}

// cloneClientID is parseHeader's keep: a copy of the client id.
func cloneClientID(id []byte) *string {
	s := string(id)
	return &s
}

// parseHeaderKeeping is parseHeader with the client id's bytes, in frame,
// made a string by keep, which must not alias them.
func parseHeaderKeeping(frame []byte, keep func(id []byte) *string) (req *Request, body kmsg.Request, rest []byte, err error) {
	r := kbin.Reader{Src: frame}
	key, ver, corr := r.Int16(), r.Int16(), r.Int32()
	if err := r.Complete(); err != nil {
		return nil, nil, nil, fmt.Errorf("%w: header shorter than 8 bytes", ErrMalformed)
	}
	req = &Request{Key: key, Version: ver, CorrelationID: corr}
	body = kmsg.RequestForKey(key)
	if body == nil {
		return req, nil, nil, fmt.Errorf("%w %d (version %d)", ErrUnknownKey, key, ver)
	}
	if !(key == int16(kmsg.ControlledShutdown) && ver == 0) { // the one header without a client id
		req.ClientID = readClientID(&r, keep)
	}
	if ver < 0 || ver > body.MaxVersion() {
		return req, nil, nil, fmt.Errorf("%w: %s v%d (kmsg decodes up to v%d)", ErrUndecodableVersion, kmsg.NameForKey(key), ver, body.MaxVersion())
	}
	body.SetVersion(ver)
	if body.IsFlexible() {
		skipTags(&r)
	}
	if err := r.Complete(); err != nil {
		return nil, nil, nil, fmt.Errorf("%w: %s v%d header: %v", ErrMalformed, kmsg.NameForKey(key), ver, err)
	}
	return req, body, r.Src, nil
}

// skipTags skips a header's tagged fields as kmsg.SkipTags does, whose
// interface parameter would make every request's reader a heap object.
func skipTags(r *kbin.Reader) {
	for num := r.Uvarint(); num > 0 && r.Ok(); num-- {
		r.Uvarint() // tag
		r.Span(int(r.Uvarint()))
	}
}

// readClientID reads a header's nullable client id, made a string by keep.
func readClientID(r *kbin.Reader, keep func([]byte) *string) *string {
	l := r.Int16()
	if l < 0 {
		return nil
	}
	id := r.Span(int(l))
	if !r.Ok() {
		return nil // the header's Complete reports it
	}
	return keep(id)
}
