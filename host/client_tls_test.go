package host_test

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

	"github.com/twmb/franz-go/pkg/kgo"
)

// mtlsPKI writes a CA, a 127.0.0.1 server certificate and key into dir and
// returns the CA pool and a client certificate the CA signed.
func mtlsPKI(t *testing.T, dir string) (*x509.CertPool, tls.Certificate) {
	t.Helper()
	var caCert *x509.Certificate
	var caKey *ecdsa.PrivateKey
	issue := func(cn string, ca bool, usage x509.ExtKeyUsage) ([]byte, *ecdsa.PrivateKey) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
		tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn}, NotBefore: time.Now().Add(-time.Hour),
			NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
		parent, signer := tmpl, key
		if ca {
			tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage, tmpl.ExtKeyUsage = true, true, x509.KeyUsageCertSign, nil
		} else {
			parent, signer = caCert, caKey
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
		if err != nil {
			t.Fatal(err)
		}
		return der, key
	}
	write := func(name, typ string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	caDER, key := issue("test CA", true, 0)
	caCert, _ = x509.ParseCertificate(caDER)
	caKey = key
	write("ca.pem", "CERTIFICATE", caDER)
	srvDER, srvKey := issue("coordhost", false, x509.ExtKeyUsageServerAuth)
	write("server.pem", "CERTIFICATE", srvDER)
	keyDER, _ := x509.MarshalECPrivateKey(srvKey)
	write("server.key", "EC PRIVATE KEY", keyDER)
	cliDER, cliKey := issue("alice", false, x509.ExtKeyUsageClientAuth)
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return pool, tls.Certificate{Certificate: [][]byte{cliDER}, PrivateKey: cliKey}
}

// TestKafkaListenerRequiresClientCertificate: with kafka.tls.client.ca.file
// a client with a certificate the CA signed is served; one without a
// certificate is not.
func TestKafkaListenerRequiresClientCertificate(t *testing.T) {
	dir := t.TempDir()
	pool, client := mtlsPKI(t, dir)
	srv := startHost(t, "", "--kafka.tls.cert.file="+filepath.Join(dir, "server.pem"), "--kafka.tls.key.file="+filepath.Join(dir, "server.key"),
		"--kafka.tls.client.ca.file="+filepath.Join(dir, "ca.pem"))
	produce := func(certs []tls.Certificate) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(srv.KafkaAddr()), kgo.DialTLSConfig(&tls.Config{RootCAs: pool, Certificates: certs}),
			kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("mtls"), kgo.RetryTimeout(3*time.Second), kgo.RecordDeliveryTimeout(5*time.Second))
		if err != nil {
			return err
		}
		defer cl.Close()
		return cl.ProduceSync(timeout(t), kgo.StringRecord("over mtls")).FirstErr()
	}
	if err := produce([]tls.Certificate{client}); err != nil {
		t.Fatalf("produce with a client certificate: %v", err)
	}
	if err := produce(nil); err == nil {
		t.Fatal("a client without a certificate was served")
	}
}
