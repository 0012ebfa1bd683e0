package userdata

import (
	"errors"
	"fmt"
)

// ErrMalformed is wrapped by every error a decoder returns for bytes that do
// not follow the format (truncation, bad counts, bad versions, bad strings).
var ErrMalformed = errors.New("malformed userdata")

// ErrUnencodable is wrapped by every error an encoder returns for a value the
// requested version cannot carry (for example a named topology below v10).
var ErrUnencodable = errors.New("value cannot be encoded")

func unencodable(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrUnencodable}, args...)...)
}
