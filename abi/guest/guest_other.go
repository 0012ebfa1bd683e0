//go:build !wasip1

package guest

import (
	"fmt"
	"os"
)

// hostLog writes to standard error when the SDK runs natively (tests).
func hostLog(level int32, msg string) {
	fmt.Fprintf(os.Stderr, "plugin log level=%d: %s\n", level, msg)
}
