package wire

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"strings"
	"unicode/utf8"
)

// CertPrincipal is the principal Kafka 4.4's default principal builder
// gives a client that authenticated with certificate on an SSL listener
// with the default ssl.principal.mapping.rules: "User:" and the subject's
// distinguished name as Java's X500Principal.getName() writes it (RFC
// 2253: the most specific RDN first, CN, C, L, ST, O, OU, STREET, DC and
// UID by keyword, other attributes as dotted OID=#hex of the DER value,
// special characters escaped). A keyword attribute that is not valid
// UTF-8, which Java would print with replacement characters, is an error.
func CertPrincipal(cert *x509.Certificate) (string, error) {
	dn, err := rfc2253(cert.RawSubject)
	if err != nil {
		return "", err
	}
	return "User:" + dn, nil
}

// attribute is one AttributeTypeAndValue with its value's DER kept.
type attribute struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// rdnSET is one relative distinguished name (encoding/asn1 reads a type
// whose name ends in SET as a SET).
type rdnSET []attribute

var rfc2253Keywords = map[string]string{
	"2.5.4.3": "CN", "2.5.4.6": "C", "2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.10": "O", "2.5.4.11": "OU",
	"2.5.4.9": "STREET", "0.9.2342.19200300.100.1.25": "DC", "0.9.2342.19200300.100.1.1": "UID",
}

func rfc2253(raw []byte) (string, error) {
	var seq []rdnSET
	rest, err := asn1.Unmarshal(raw, &seq)
	if err != nil {
		return "", err
	}
	if len(rest) > 0 {
		return "", errors.New("trailing bytes after the subject")
	}
	parts := make([]string, 0, len(seq))
	for i := len(seq) - 1; i >= 0; i-- {
		avas := make([]string, 0, len(seq[i]))
		for _, a := range seq[i] {
			ava, err := formatAVA(a)
			if err != nil {
				return "", err
			}
			avas = append(avas, ava)
		}
		parts = append(parts, strings.Join(avas, "+"))
	}
	return strings.Join(parts, ","), nil
}

func formatAVA(a attribute) (string, error) {
	oid := a.Type.String()
	kw, known := rfc2253Keywords[oid]
	if !known {
		return oid + "=#" + hex.EncodeToString(a.Value.FullBytes), nil
	}
	s, isString, err := derString(a.Value)
	if err != nil {
		return "", err
	}
	if !isString {
		return kw + "=#" + hex.EncodeToString(a.Value.FullBytes), nil
	}
	return kw + "=" + escapeRFC2253(s), nil
}

// errNotUTF8 refuses a name Java would print with replacement
// characters (it reads every string type's bytes as UTF-8), whose exact
// form coordhost does not reproduce.
var errNotUTF8 = errors.New("a subject attribute is not valid UTF-8")

// derString is the text Java's X500Principal prints for a string-typed
// value: its content bytes read as UTF-8, whatever the string type.
func derString(v asn1.RawValue) (s string, isString bool, err error) {
	if v.Class != asn1.ClassUniversal {
		return "", false, nil
	}
	switch v.Tag {
	case asn1.TagUTF8String, asn1.TagPrintableString, asn1.TagIA5String, asn1.TagT61String, asn1.TagBMPString,
		27, 28: // GeneralString, UniversalString
	default:
		return "", false, nil
	}
	if !utf8.Valid(v.Bytes) {
		return "", true, errNotUTF8
	}
	return string(v.Bytes), true, nil
}

// escapeRFC2253 escapes as Java's AVA.toRFC2253String: a backslash before
// , = + < > # ; " and \, NUL as \00, and every leading and trailing space
// or carriage return.
func escapeRFC2253(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch {
		case strings.ContainsRune(`,=+<>#;"\`, c):
			b.WriteByte('\\')
			b.WriteRune(c)
		case c == 0:
			b.WriteString(`\00`)
		default:
			b.WriteRune(c)
		}
	}
	r := []rune(b.String())
	lead, trail := 0, len(r)-1
	for lead < len(r) && (r[lead] == ' ' || r[lead] == '\r') {
		lead++
	}
	for trail >= 0 && (r[trail] == ' ' || r[trail] == '\r') {
		trail--
	}
	var out strings.Builder
	for i, c := range r {
		if i < lead || i > trail {
			out.WriteByte('\\')
		}
		out.WriteRune(c)
	}
	return out.String()
}

// certPrincipal is the principal of the connection's verified client
// certificate ("" without one), derived once the handshake is done.
func (c *conn) certPrincipal() string {
	if c.principal != "" || c.s.cfg.TLS == nil || c.s.cfg.TLS.ClientCAs == nil {
		return c.principal
	}
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return ""
	}
	st := tc.ConnectionState()
	if !st.HandshakeComplete || len(st.VerifiedChains) == 0 {
		return ""
	}
	p, err := CertPrincipal(st.PeerCertificates[0])
	if err != nil {
		p = "unknown"
	}
	c.principal = p
	return p
}
