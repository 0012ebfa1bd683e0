package config

import (
	"strings"
	"testing"
)

// TestOffsetsIdentity: dataplane.offsets.identity defaults to coordhost,
// and client starts only in front of an external cluster with
// coordhost's own SCRAM connection (which creates the tokens).
func TestOffsetsIdentity(t *testing.T) {
	external := []string{"--dataplane.mode=external", "--dataplane.bootstrap=127.0.0.1:9092"}
	client := "--dataplane.offsets.identity=client"
	for _, tc := range []struct {
		name   string
		args   []string
		want   string // "" accepted, else a part of the error
		client bool
	}{
		{"default", append(external, "--dataplane.sasl.mechanism=SCRAM-SHA-256", "--dataplane.sasl.username=c"), "", false},
		{"client with SCRAM", append(external, "--dataplane.sasl.mechanism=SCRAM-SHA-512", "--dataplane.sasl.username=c", client), "", true},
		{"client with PLAIN", append(external, "--dataplane.sasl.mechanism=PLAIN", "--dataplane.sasl.username=c", client), "SCRAM", false},
		{"client without SASL", append(external, client), "SCRAM", false},
		{"client embedded", []string{client}, "external", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := load(t, tc.args)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == "" && c.DataPlane.OffsetsAsClient != tc.client:
				t.Fatalf("OffsetsAsClient = %v, want %v", c.DataPlane.OffsetsAsClient, tc.client)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "dataplane.offsets.identity")):
				t.Fatalf("error %v, want one naming dataplane.offsets.identity and %q", err, tc.want)
			}
		})
	}
}
