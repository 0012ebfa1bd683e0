// Command coordhost runs the coordhost Kafka group coordinator.
//
// The server and the plugin tools (assign, check, simulate, ab) are being
// built; until they exist coordhost says so and exits non-zero.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "plugin" {
		os.Exit(pluginCommand(os.Args[2:], os.Stdout, os.Stderr))
	}
	fmt.Fprintln(os.Stderr, "coordhost: the server is not implemented yet (see README.md, feature status)")
	os.Exit(2)
}
