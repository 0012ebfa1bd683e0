module github.com/coordhost/coordhost

go 1.26.0

require (
	github.com/tetratelabs/wazero v1.12.0
	github.com/twmb/franz-go/pkg/kmsg v1.15.1
)

require golang.org/x/sys v0.44.0 // indirect
