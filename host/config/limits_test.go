package config

import (
	"strings"
	"testing"
)

// TestListenerLimits: the limit keys reach Config with their defaults and
// values; a budget below the frame limit and SASL required with the
// embedded data plane fail with the keys named.
func TestListenerLimits(t *testing.T) {
	c, err := load(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	k := c.Kafka
	if k.QueuedMaxRequestBytes != 256<<20 || k.MaxConnections != 4096 || k.MaxConnectionsPerIP != 1024 || k.SASLRequired || k.SASLMaxReceiveBytes != 512<<10 {
		t.Fatalf("defaults: %+v", k)
	}
	c, err = load(t, []string{"--kafka.queued.max.request.bytes=2097152", "--kafka.max.request.bytes=1048576", "--kafka.max.connections.total=7",
		"--kafka.max.connections.per.ip=3", "--kafka.sasl.required=true", "--kafka.sasl.max.receive.bytes=4096",
		"--dataplane.mode=external", "--dataplane.bootstrap=127.0.0.1:9092"})
	if err != nil {
		t.Fatal(err)
	}
	k = c.Kafka
	if k.QueuedMaxRequestBytes != 2<<20 || k.MaxConnections != 7 || k.MaxConnectionsPerIP != 3 || !k.SASLRequired || k.SASLMaxReceiveBytes != 4096 {
		t.Fatalf("set: %+v", k)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--kafka.queued.max.request.bytes=1048576"}, "kafka.queued.max.request.bytes = 1048576 is below kafka.max.request.bytes"},
		{[]string{"--kafka.sasl.required=true"}, "kafka.sasl.required = true needs dataplane.mode"},
		{[]string{"--kafka.max.connections.total=0"}, "kafka.max.connections.total"},
	} {
		if _, err := load(t, tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

// A program that changes the limits in Go gets the same checks as a file.
func TestValidateChecksLimitsSetInGo(t *testing.T) {
	c := Default()
	c.Kafka.QueuedMaxRequestBytes = 0
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "kafka.queued.max.request.bytes") {
		t.Fatalf("Validate with a zero request budget: %v, want an error naming kafka.queued.max.request.bytes", err)
	}
}
