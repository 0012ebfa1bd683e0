package config

import (
	"strings"
	"testing"
)

// TestClientCertificatesNeedSASLInFrontOfACluster: client certificates on
// the Kafka listeners start with TLS, and in front of an external cluster
// only with SASL; without it coordhost would authorize every certificate
// holder as its own unauthenticated upstream session, so it refuses.
func TestClientCertificatesNeedSASLInFrontOfACluster(t *testing.T) {
	tls := []string{"--kafka.tls.cert.file=c.pem", "--kafka.tls.key.file=k.pem", "--kafka.tls.client.ca.file=ca.pem"}
	external := []string{"--dataplane.mode=external", "--dataplane.bootstrap=127.0.0.1:9092"}
	cases := []struct {
		name string
		args []string
		want string // "" accepted, else a part of the error
	}{
		{"without TLS", []string{"--kafka.tls.client.ca.file=ca.pem"}, "needs kafka.tls.cert.file"},
		{"embedded", tls, ""},
		{"external without SASL", append(append([]string{}, tls...), external...), "needs SASL"},
		{"external with coordhost's SASL", append(append([]string{}, tls...), append(external, "--dataplane.sasl.mechanism=SCRAM-SHA-256", "--dataplane.sasl.username=coordhost")...), ""},
		{"external with kafka.sasl.required", append(append([]string{}, tls...), append(external, "--kafka.sasl.required=true")...), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.args)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `kafka.tls.client.ca.file = "ca.pem"`)):
				t.Fatalf("error %v, want one naming kafka.tls.client.ca.file and %q", err, tc.want)
			}
		})
	}
}

// TestClientCertificatesWithDelegationTokens: certificate holders logged
// in upstream with delegation tokens need client certificates, an
// external cluster, coordhost's own SCRAM connection (to create the
// tokens) and no client SASL.
func TestClientCertificatesWithDelegationTokens(t *testing.T) {
	tokens := "--dataplane.authorization.client.certificates=delegation-tokens"
	tls := []string{"--kafka.tls.cert.file=c.pem", "--kafka.tls.key.file=k.pem", "--kafka.tls.client.ca.file=ca.pem"}
	external := []string{"--dataplane.mode=external", "--dataplane.bootstrap=127.0.0.1:9092"}
	scram := []string{"--dataplane.sasl.mechanism=SCRAM-SHA-512", "--dataplane.sasl.username=coordhost"}
	join := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return append(out, tokens)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"accepted", join(tls, external, scram), ""},
		{"no client CA", join(tls[:2], external, scram), "needs kafka.tls.client.ca.file"},
		{"embedded", join(tls), "needs kafka.tls.client.ca.file and dataplane.mode"},
		{"no SASL of its own", join(tls, external), "needs dataplane.sasl.mechanism SCRAM"},
		{"PLAIN", join(tls, external, []string{"--dataplane.sasl.mechanism=PLAIN", "--dataplane.sasl.username=coordhost"}), "needs dataplane.sasl.mechanism SCRAM"},
		{"client SASL required", join(tls, external, scram, []string{"--kafka.sasl.required=true"}), "clients authenticate with their certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := load(t, tc.args)
			switch {
			case tc.want == "" && (err != nil || !c.DataPlane.CertTokens):
				t.Fatalf("refused or not set: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "dataplane.authorization.client.certificates")):
				t.Fatalf("error %v, want one naming the key and %q", err, tc.want)
			}
		})
	}
}
