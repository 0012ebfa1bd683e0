package config

import (
	"io"
	"reflect"
	"strings"
	"testing"
)

// TestDefaultIsLoadWithoutInput: Default is what coordhost runs with no
// file, environment or flags.
func TestDefaultIsLoadWithoutInput(t *testing.T) {
	d := Default()
	l, err := Load(nil, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d, l) {
		t.Fatalf("Default() = %+v\nLoad(nil) = %+v", d, l)
	}
	if !d.DataPlane.Embedded || d.Kafka.Listen != "127.0.0.1:9092" || d.DataDir != "./coordhost-data" {
		t.Fatalf("Default: embedded=%v kafka.listen=%q data.dir=%q", d.DataPlane.Embedded, d.Kafka.Listen, d.DataDir)
	}
	if Default() == d || Default().Groups == d.Groups {
		t.Fatal("Default returns a shared value; a caller's change would leak into the next one")
	}
}

// TestValidateNamesTheKey: a configuration changed in Go is checked with the
// same rules as a loaded one, each error naming the key and value.
func TestValidateNamesTheKey(t *testing.T) {
	cases := []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.Kafka.Listen = "nohost" }, `kafka.listen = "nohost"`},
		{func(c *Config) { c.Admin.Listen = "" }, `admin.listen = ""`},
		{func(c *Config) { c.DataDir = "" }, `data.dir = ""`},
		{func(c *Config) { c.Kafka.TLSCertFile = "c.pem" }, `kafka.tls.cert.file = "c.pem"`},
		{func(c *Config) { c.DataPlane.Embedded = false }, "needs dataplane.bootstrap"},
		{func(c *Config) { c.DataPlane.Embedded, c.DataPlane.Bootstrap = false, []string{"kafka"} }, `dataplane.bootstrap entry "kafka"`},
		{func(c *Config) { c.DataPlane.TLS = true }, `apply to dataplane.mode = "external" only`},
		{func(c *Config) {
			c.DataPlane.Embedded, c.DataPlane.Bootstrap, c.DataPlane.SASLMechanism = false, []string{"k:9092"}, "PLAIN"
		}, `dataplane.sasl.mechanism = "PLAIN" needs dataplane.sasl.username`},
		{func(c *Config) {
			c.DataPlane.Embedded, c.DataPlane.Bootstrap, c.DataPlane.SASLMechanism = false, []string{"k:9092"}, "GSSAPI"
		}, `dataplane.sasl.mechanism = "GSSAPI"`},
		{func(c *Config) { c.Store.Kind = "kafka" }, `store.kind = "kafka" needs dataplane.mode = "external"`},
		{func(c *Config) { c.Cluster.ID = "east" }, `cluster.id = "east" needs store.kind = "kafka"`},
		{func(c *Config) {
			c.DataPlane.Embedded, c.DataPlane.Bootstrap, c.Store.Kind, c.Cluster.ID = false, []string{"k:9092"}, "kafka", "east"
			c.Cluster.LeaseMargin = c.Cluster.SessionTimeout
		}, "cluster.ownership.lease.margin.ms = 10000 must be below cluster.ownership.session.timeout.ms = 10000"},
		{func(c *Config) { c.Groups = nil }, "Groups is nil"},
	}
	if err := Default().Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
	for _, tc := range cases {
		c := Default()
		tc.change(c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want an error containing %q", err, tc.want)
		}
	}
}
