package wire

import "testing"

func TestSASLUser(t *testing.T) {
	for _, c := range []struct{ mech, msg, want string }{
		{"PLAIN", "\x00alice\x00secret", "alice"},
		{"PLAIN", "admin\x00alice\x00secret", "admin"},
		{"PLAIN", "alice-no-separators", ""},
		{"SCRAM-SHA-256", "n,,n=alice,r=fyko+d2lbbFgONRv9qkxdawL", "alice"},
		{"SCRAM-SHA-512", "n,,n=a=2Cb=3Dc,r=x", "a,b=c"},
		{"SCRAM-SHA-256", "n,,r=x,n=later", ""},
		{"OAUTHBEARER", "n,a=bob,\x01auth=Bearer e30.e30.\x01\x01", "bob"},
		{"OAUTHBEARER", "n,,\x01auth=Bearer e30.e30.\x01\x01", ""},
		{"OAUTHBEARER", "n,,\x01auth=Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJjYXJvbCJ9.\x01\x01", "carol"},
		{"OAUTHBEARER", "n,,\x01auth=Bearer x.!!!.\x01\x01", ""},
		{"GSSAPI", "anything", ""},
	} {
		if got := saslUser(c.mech, []byte(c.msg)); got != c.want {
			t.Errorf("saslUser(%s, %q) = %q, want %q", c.mech, c.msg, got, c.want)
		}
	}
}

// FuzzSASLUser: the first SASL message is the client's, untrusted bytes.
func FuzzSASLUser(f *testing.F) {
	f.Add("PLAIN", []byte("\x00alice\x00secret"))
	f.Add("SCRAM-SHA-256", []byte("n,,n=alice,r=x"))
	f.Add("OAUTHBEARER", []byte("n,a=bob,\x01auth=Bearer x\x01\x01"))
	f.Fuzz(func(t *testing.T, mech string, msg []byte) {
		_ = saslUser(mech, msg)
	})
}
