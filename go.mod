module github.com/coordhost/coordhost

go 1.26.0

require (
	github.com/cockroachdb/datadriven v1.0.3
	github.com/twmb/franz-go v1.22.3
	github.com/twmb/franz-go/pkg/kmsg v1.15.1
)

require github.com/pmezard/go-difflib v1.0.0 // indirect
