package wire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// ReadFrameSize reports what io.ReadFull would, from a bufio.Reader (the
// connections' path, which peeks the prefix in place) as from any other
// reader: the size with the prefix consumed, io.EOF before any byte,
// io.ErrUnexpectedEOF within the prefix, a refused size, and a read
// error as it came.
func TestReadFrameSize(t *testing.T) {
	boom := errors.New("boom")
	bytesOf := func(b ...byte) func() io.Reader { return func() io.Reader { return bytes.NewReader(b) } }
	for _, c := range []struct {
		name string
		in   func() io.Reader
		n    int32
		err  error
		rest []byte
	}{
		{"size", bytesOf(0, 0, 1, 2, 9), 258, nil, []byte{9}},
		{"empty", bytesOf(), 0, io.EOF, nil},
		{"short", bytesOf(0, 0), 0, io.ErrUnexpectedEOF, nil},
		{"too large", bytesOf(0, 0, 4, 1), 0, ErrFrameSize, nil},
		{"negative", bytesOf(0xff, 0, 0, 0), 0, ErrFrameSize, nil},
		{"error", func() io.Reader { return iotest.ErrReader(boom) }, 0, boom, nil},
		{"one byte a read", func() io.Reader { return iotest.OneByteReader(bytes.NewReader([]byte{0, 0, 0, 7, 1})) }, 7, nil, []byte{1}},
	} {
		for _, buffered := range []bool{false, true} {
			r := c.in()
			if buffered {
				r = bufio.NewReaderSize(r, 16)
			}
			n, err := ReadFrameSize(r, 1024)
			if n != c.n || !errors.Is(err, c.err) {
				t.Errorf("%s (buffered %v): %d, %v; want %d, %v", c.name, buffered, n, err, c.n, c.err)
				continue
			}
			if err == nil {
				if rest, _ := io.ReadAll(r); !bytes.Equal(rest, c.rest) {
					t.Errorf("%s (buffered %v): %v left after the size, want %v", c.name, buffered, rest, c.rest)
				}
			}
		}
	}
}
