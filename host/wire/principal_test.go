package wire

import (
	"bytes"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"os/exec"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/coordhost/coordhost/internal/testtool"
)

var (
	oidCN, oidOU, oidO = asn1.ObjectIdentifier{2, 5, 4, 3}, asn1.ObjectIdentifier{2, 5, 4, 11}, asn1.ObjectIdentifier{2, 5, 4, 10}
	oidDC, oidUID      = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}, asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 1}
	oidEmail           = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
)

// principalSubjects are distinguished names covering each rule of
// CertPrincipal: keywords, OIDs as hex, escapes, string types, multi-valued RDNs.
func principalSubjects(t *testing.T) [][]byte {
	t.Helper()
	bmp := func(s string) asn1.RawValue {
		var b []byte
		for _, u := range utf16.Encode([]rune(s)) {
			b = append(b, byte(u>>8), byte(u))
		}
		return asn1.RawValue{Tag: asn1.TagBMPString, Bytes: b}
	}
	names := []pkix.Name{
		{CommonName: "alice", OrganizationalUnit: []string{"eng"}, Organization: []string{"Org, Inc."}, Country: []string{"US"}},
		{CommonName: "  lead#and=trail \r", Locality: []string{`a+b<c>d;e"f\g`}, Province: []string{"ST"}, StreetAddress: []string{"1 Main"}, SerialNumber: "42", PostalCode: []string{"9999"}},
		{CommonName: "#x", ExtraNames: []pkix.AttributeTypeAndValue{{Type: oidDC, Value: "example"}, {Type: oidUID, Value: "uid1"}, {Type: oidEmail, Value: "a@b.c"}}},
		{CommonName: "ünïcødé ", Organization: []string{"x\x00y"}},
	}
	var out [][]byte
	for _, n := range names {
		b, err := asn1.Marshal(n.ToRDNSequence())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	raw := []pkix.RDNSequence{
		{{{Type: oidCN, Value: "zed"}, {Type: oidOU, Value: "aaa"}}, {{Type: oidO, Value: "o"}}}, // multi-valued
		{{{Type: oidCN, Value: bmp("bmp")}}, {{Type: oidO, Value: asn1.RawValue{Tag: asn1.TagT61String, Bytes: []byte("t61")}}}},
		{{{Type: oidCN, Value: "😃 ☃"}}, {{Type: oidEmail, Value: asn1.RawValue{Tag: asn1.TagIA5String, Bytes: []byte{0xff}}}}},
		{{{Type: oidCN, Value: 7}}}, // not a string: hex even under a keyword
		{},
	}
	for _, s := range raw {
		b, err := asn1.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// TestCertPrincipalMatchesJava: the principal of each subject is "User:"
// and exactly what Java's X500Principal.getName() prints for it, which is
// what Kafka's default SSL principal builder uses.
func TestCertPrincipalMatchesJava(t *testing.T) {
	java := testtool.Require(t, "java")
	subjects := principalSubjects(t)
	var in bytes.Buffer
	for _, s := range subjects {
		in.WriteString(hex.EncodeToString(s) + "\n")
	}
	cmd := exec.Command(java, "testdata/X500Name.java")
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("java X500Name: %v", err)
	}
	want := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(want) != len(subjects) {
		t.Fatalf("java printed %d names for %d subjects:\n%s", len(want), len(subjects), out)
	}
	for i, s := range subjects {
		got, err := CertPrincipal(&x509.Certificate{RawSubject: s})
		if err != nil {
			t.Fatalf("subject %x: %v", s, err)
		}
		if got != "User:"+want[i] {
			t.Errorf("subject %x: %q, Java: %q", s, got, "User:"+want[i])
		}
	}
}

// TestCertPrincipalRefusesInvalidUTF8: a name Java would print with
// replacement characters is an error, not a guess.
func TestCertPrincipalRefusesInvalidUTF8(t *testing.T) {
	for _, b := range [][]byte{{0xff}, {'a', 0xe2, 0x98}, {0xed, 0xa0, 0x80}} {
		raw, err := asn1.Marshal(pkix.RDNSequence{{{Type: oidCN, Value: asn1.RawValue{Tag: asn1.TagUTF8String, Bytes: b}}}})
		if err != nil {
			t.Fatal(err)
		}
		if p, err := CertPrincipal(&x509.Certificate{RawSubject: raw}); err == nil {
			t.Errorf("CN %x: principal %q, want an error", b, p)
		}
	}
}

// FuzzCertPrincipal: any subject bytes give a principal or an error, never a panic.
func FuzzCertPrincipal(f *testing.F) {
	for _, s := range principalSubjects(&testing.T{}) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := CertPrincipal(&x509.Certificate{RawSubject: raw})
		if err == nil && !strings.HasPrefix(p, "User:") {
			t.Fatalf("principal %q", p)
		}
	})
}
