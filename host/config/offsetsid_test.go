package config

import (
	"strings"
	"testing"
)

// TestOffsetsIdentity: dataplane.offsets.identity defaults to client,
// which takes effect in front of an external cluster coordhost reaches
// with SASL and needs SCRAM there (it creates the tokens); coordhost
// turns it off; without SASL, and on the embedded data plane, coordhost's
// own connection writes offsets with either value.
func TestOffsetsIdentity(t *testing.T) {
	external := []string{"--dataplane.mode=external", "--dataplane.bootstrap=127.0.0.1:9092"}
	join := func(parts ...string) []string { return append(append([]string{}, external...), parts...) }
	const client, own = "--dataplane.offsets.identity=client", "--dataplane.offsets.identity=coordhost"
	scram := []string{"--dataplane.sasl.mechanism=SCRAM-SHA-256", "--dataplane.sasl.username=c"}
	plain := []string{"--dataplane.sasl.mechanism=PLAIN", "--dataplane.sasl.username=c"}
	for _, tc := range []struct {
		name   string
		args   []string
		want   string // "" accepted, else a part of the error
		client bool
	}{
		{"default with SCRAM", join(scram...), "", true},
		{"client with SCRAM-SHA-512", join("--dataplane.sasl.mechanism=SCRAM-SHA-512", "--dataplane.sasl.username=c", client), "", true},
		{"coordhost with SCRAM", join(append(scram, own)...), "", false},
		{"default with PLAIN", join(plain...), `set dataplane.offsets.identity = "coordhost"`, false},
		{"client with PLAIN", join(append(plain, client)...), "SCRAM", false},
		{"coordhost with PLAIN", join(append(plain, own)...), "", false},
		{"default without SASL", join(), "", false},
		{"client without SASL", join(client), "", false},
		{"default embedded", nil, "", false},
		{"client embedded", []string{client}, "", false},
		{"another value", join(append(scram, "--dataplane.offsets.identity=broker")...), "broker", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := load(t, tc.args)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == "" && c.DataPlane.OffsetsAsClient() != tc.client:
				t.Fatalf("OffsetsAsClient() = %v, want %v", c.DataPlane.OffsetsAsClient(), tc.client)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "dataplane.offsets.identity")):
				t.Fatalf("error %v, want one naming dataplane.offsets.identity and %q", err, tc.want)
			}
		})
	}
	// a configuration built in Go is validated the same way
	c := Default()
	c.DataPlane.Embedded, c.DataPlane.Bootstrap, c.DataPlane.SASLMechanism, c.DataPlane.SASLUser = false, []string{"k:9092"}, "PLAIN", "c"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "dataplane.offsets.identity") {
		t.Fatalf("Validate() of the default identity with PLAIN = %v", err)
	}
	c.DataPlane.OffsetsIdentity = "coordhost"
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate() with coordhost and PLAIN = %v", err)
	}
}
