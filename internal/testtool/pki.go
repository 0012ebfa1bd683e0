package testtool

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PKI is a certificate authority for tests on loopback: every certificate
// it issues is valid for 127.0.0.1 for an hour, as server and as client.
type PKI struct {
	CA   tls.Certificate
	Pool *x509.CertPool // holds CA
}

// NewPKI makes a CA named cn.
func NewPKI(tb testing.TB, cn string) *PKI {
	tb.Helper()
	ca := issue(tb, pkix.Name{CommonName: cn}, nil)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Leaf)
	return &PKI{CA: ca, Pool: pool}
}

// Issue makes a certificate for subject signed by the CA.
func (p *PKI) Issue(tb testing.TB, subject pkix.Name) tls.Certificate {
	tb.Helper()
	return issue(tb, subject, &p.CA)
}

func issue(tb testing.TB, subject pkix.Name, parent *tls.Certificate) tls.Certificate {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: subject, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	signer, signerKey := tmpl, any(key)
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage, tmpl.ExtKeyUsage = true, true, x509.KeyUsageCertSign, nil
	} else {
		signer, signerKey = parent.Leaf, parent.PrivateKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		tb.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// WriteCA writes the CA certificate as PEM into dir and returns its path.
func (p *PKI) WriteCA(tb testing.TB, dir string) string {
	tb.Helper()
	return writePEM(tb, filepath.Join(dir, "ca.pem"), "CERTIFICATE", p.CA.Leaf.Raw)
}

// WriteCert writes cert and its key as PEM into dir (name.pem, name.key)
// and returns both paths.
func WriteCert(tb testing.TB, dir, name string, cert tls.Certificate) (certFile, keyFile string) {
	tb.Helper()
	key, err := x509.MarshalECPrivateKey(cert.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		tb.Fatal(err)
	}
	return writePEM(tb, filepath.Join(dir, name+".pem"), "CERTIFICATE", cert.Leaf.Raw),
		writePEM(tb, filepath.Join(dir, name+".key"), "EC PRIVATE KEY", key)
}

func writePEM(tb testing.TB, path, typ string, der []byte) string {
	tb.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}
