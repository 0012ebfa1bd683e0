package shadowproc

// The pipe protocol between coordhost and its shadow process. Every
// message is one frame: a 4-byte big-endian payload length, then the
// payload, whose first byte is the message type. A reader never
// allocates a declared length above its limit: such a frame is an error
// before any byte of it is read. Integers in payloads are big-endian;
// strings carry a 2-byte length; the last field of an assign request and
// of a result (ABI bytes) runs to the end of the payload.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// Message types (the payload's first byte).
const (
	msgConfig = 'c' // parent → child, first: the plugin limits
	msgLoad   = 'l' // parent → child: load a module for a shadow name
	msgAssign = 'a' // parent → child: run one assignment
	msgResult = 'r' // child → parent: the answer to a load or an assign
)

// maxControlFrame bounds a frame that carries no ABI bytes (config, load).
const maxControlFrame = 64 << 10

// maxData bounds the ABI bytes of one frame (a request or an output), and
// maxFrame a whole frame.
const (
	maxData  = 64 << 20
	maxFrame = maxData + maxControlFrame
)

// ErrFrameTooLarge is a frame whose declared length is above the limit.
var ErrFrameTooLarge = errors.New("shadowproc: frame longer than the limit")

// errShort is a payload that ends inside a field.
var errShort = errors.New("shadowproc: truncated message")

// readFrame reads one frame's payload into buf (grown as needed, never
// past max) and returns it.
func readFrame(r io.Reader, max int, buf []byte) ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(h[:])
	if n == 0 {
		return nil, errors.New("shadowproc: empty frame")
	}
	if uint64(n) > uint64(max) {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, n, max)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// frame starts a payload of type t in dst (reused), leaving room for the
// length; finish with writeFrame.
func frame(dst []byte, t byte) []byte {
	return append(dst[:0], 0, 0, 0, 0, t)
}

// writeFrame fills in the length of a frame built with frame and writes it.
func writeFrame(w io.Writer, f []byte, max int) error {
	n := len(f) - 4
	if n > max {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, n, max)
	}
	binary.BigEndian.PutUint32(f, uint32(n))
	_, err := w.Write(f)
	return err
}

func putString(b []byte, s string) []byte {
	if len(s) > 0xffff {
		s = s[:0xffff]
	}
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// decoder reads the fields of a payload after its type byte.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) take(n int) []byte {
	if d.err != nil || n > len(d.b) {
		d.err = errShort
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) u8() byte {
	if v := d.take(1); v != nil {
		return v[0]
	}
	return 0
}

func (d *decoder) u32() uint32 {
	if v := d.take(4); v != nil {
		return binary.BigEndian.Uint32(v)
	}
	return 0
}

func (d *decoder) u64() uint64 {
	if v := d.take(8); v != nil {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

func (d *decoder) str() string {
	return string(d.take(d.u16()))
}

func (d *decoder) u16() int {
	if v := d.take(2); v != nil {
		return int(binary.BigEndian.Uint16(v))
	}
	return 0
}

// rest is the remaining bytes (aliasing the payload).
func (d *decoder) rest() []byte {
	v := d.b
	d.b = nil
	return v
}

// done reports the first error, or one for bytes left over.
func (d *decoder) done() error {
	if d.err == nil && len(d.b) > 0 {
		d.err = fmt.Errorf("shadowproc: %d bytes after the last field", len(d.b))
	}
	return d.err
}

// limits are the plugin limits the child loads modules with: the
// parent's, sent once as the first frame.
type limits struct {
	MemoryLimitPages  uint32
	Deadline          time.Duration
	NoDeadline        bool
	Interpreter       bool
	MaxModuleBytes    int64
	MaxOutputBytes    int64
	RecycleAboveBytes uint64
	CacheDir          string
}

func appendLimits(b []byte, l limits) []byte {
	b = frame(b, msgConfig)
	b = binary.BigEndian.AppendUint32(b, l.MemoryLimitPages)
	b = binary.BigEndian.AppendUint64(b, uint64(l.Deadline))
	var flags byte
	if l.NoDeadline {
		flags |= 1
	}
	if l.Interpreter {
		flags |= 2
	}
	b = append(b, flags)
	b = binary.BigEndian.AppendUint64(b, uint64(l.MaxModuleBytes))
	b = binary.BigEndian.AppendUint64(b, uint64(l.MaxOutputBytes))
	b = binary.BigEndian.AppendUint64(b, l.RecycleAboveBytes)
	return putString(b, l.CacheDir)
}

func decodeLimits(p []byte) (limits, error) {
	d := decoder{b: p}
	var l limits
	l.MemoryLimitPages = d.u32()
	l.Deadline = time.Duration(d.u64())
	flags := d.u8()
	l.NoDeadline, l.Interpreter = flags&1 != 0, flags&2 != 0
	l.MaxModuleBytes = int64(d.u64())
	l.MaxOutputBytes = int64(d.u64())
	l.RecycleAboveBytes = d.u64()
	l.CacheDir = d.str()
	if err := d.done(); err != nil {
		return l, err
	}
	if flags&^3 != 0 || l.Deadline < 0 || l.MaxModuleBytes < 0 || l.MaxOutputBytes < 0 || l.MaxOutputBytes > maxData {
		return l, fmt.Errorf("shadowproc: invalid limits %+v (flags %#x)", l, flags)
	}
	return l, nil
}

// load asks the child to load the module at path for a shadow name;
// version is the module's version as the parent loaded it, which the
// child's copy must match.
type load struct {
	ID      uint64
	Name    string
	Path    string
	Version string
}

func appendLoad(b []byte, m load) []byte {
	b = frame(b, msgLoad)
	b = binary.BigEndian.AppendUint64(b, m.ID)
	b = putString(b, m.Name)
	b = putString(b, m.Path)
	return putString(b, m.Version)
}

func decodeLoad(p []byte) (load, error) {
	d := decoder{b: p}
	m := load{ID: d.u64(), Name: d.str(), Path: d.str(), Version: d.str()}
	return m, d.done()
}

// assign asks the child to run one assignment with a loaded shadow.
type assign struct {
	ID      uint64
	Timeout time.Duration
	Name    string
	Input   []byte // an encoded abi.AssignRequest
}

func appendAssign(b []byte, m assign) []byte {
	b = frame(b, msgAssign)
	b = binary.BigEndian.AppendUint64(b, m.ID)
	b = binary.BigEndian.AppendUint64(b, uint64(m.Timeout))
	b = putString(b, m.Name)
	return append(b, m.Input...)
}

func decodeAssign(p []byte) (assign, error) {
	d := decoder{b: p}
	m := assign{ID: d.u64(), Timeout: time.Duration(d.u64()), Name: d.str()}
	m.Input = d.rest()
	if err := d.done(); err != nil {
		return m, err
	}
	if m.Timeout <= 0 {
		return m, fmt.Errorf("shadowproc: assign %d: timeout %v", m.ID, m.Timeout)
	}
	return m, nil
}

// result answers a load or an assign: an error, or for an assign the
// module's raw output and the time the call took.
type result struct {
	ID      uint64
	Compute time.Duration
	Err     string
	Output  []byte
}

func appendResult(b []byte, m result) []byte {
	b = frame(b, msgResult)
	b = binary.BigEndian.AppendUint64(b, m.ID)
	b = binary.BigEndian.AppendUint64(b, uint64(m.Compute))
	b = putString(b, m.Err)
	return append(b, m.Output...)
}

func decodeResult(p []byte) (result, error) {
	d := decoder{b: p}
	m := result{ID: d.u64(), Compute: time.Duration(d.u64()), Err: d.str()}
	m.Output = d.rest()
	if err := d.done(); err != nil {
		return m, err
	}
	if m.Compute < 0 {
		return m, fmt.Errorf("shadowproc: result %d: compute time %v", m.ID, m.Compute)
	}
	return m, nil
}

// decodeFrame splits a payload into its type and fields, one of the four
// messages.
func decodeFrame(p []byte) (any, error) {
	if len(p) == 0 {
		return nil, errShort
	}
	switch body := p[1:]; p[0] {
	case msgConfig:
		return decodeLimits(body)
	case msgLoad:
		return decodeLoad(body)
	case msgAssign:
		return decodeAssign(body)
	case msgResult:
		return decodeResult(body)
	default:
		return nil, fmt.Errorf("shadowproc: unknown message type %#x", p[0])
	}
}
