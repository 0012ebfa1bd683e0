package host_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// testPKI makes a CA and a 127.0.0.1 server certificate signed by it; it
// returns the CA's PEM file and the server's TLS config.
func testPKI(t *testing.T) (string, *tls.Config) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "coordhost test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "broker"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600)
	os.WriteFile(filepath.Join(dir, "server.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	keyDER, _ := x509.MarshalECPrivateKey(key)
	os.WriteFile(filepath.Join(dir, "server.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
	return caFile, &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
}

// TestTLSListener: clients reach coordhost over TLS (kafka.tls.*).
func TestTLSListener(t *testing.T) {
	caFile, _ := testPKI(t)
	dir := filepath.Dir(caFile)
	srv := startHost(t, "", "--kafka.tls.cert.file="+filepath.Join(dir, "server.pem"), "--kafka.tls.key.file="+filepath.Join(dir, "server.key"))
	pool := x509.NewCertPool()
	raw, _ := os.ReadFile(caFile)
	pool.AppendCertsFromPEM(raw)
	ctx := timeout(t)
	tlsOpt := kgo.DialTLSConfig(&tls.Config{RootCAs: pool})
	p, err := kgo.NewClient(kgo.SeedBrokers(srv.KafkaAddr()), tlsOpt, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("tls"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.ProduceSync(ctx, kgo.StringRecord("over tls")).FirstErr(); err != nil {
		t.Fatalf("produce over TLS: %v", err)
	}
	plain := dialRaw(t, srv.KafkaAddr()) // a plaintext client gets no Kafka answer
	req := kmsg.NewPtrApiVersionsRequest()
	plain.c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, 1))
	if _, err := wireReadFrame(plain); err == nil {
		t.Fatal("a plaintext request was answered by a TLS listener")
	}
}

// TestExternalTLSAndPassThroughSASL: coordhost reaches a TLS + SASL
// cluster with its own credentials, a client authenticates with ITS OWN
// credentials through coordhost (its SASL exchange passes through on its
// own upstream connection) and produces and consumes; a client that does
// not authenticate is cut off by the cluster.
func TestExternalTLSAndPassThroughSASL(t *testing.T) {
	caFile, serverTLS := testPKI(t)
	dp := newObservedCluster(t, kfake.NumBrokers(2), kfake.TLS(serverTLS), kfake.EnableSASL(),
		kfake.Superuser("PLAIN", "coordhost", "coordpw"), kfake.Superuser("SCRAM-SHA-256", "alice", "alicepw"), kfake.SeedTopics(2, "secure"))
	srv := startHost(t, "", "--dataplane.mode=external", dp.bootstrap(), "--dataplane.tls.enabled=true", "--dataplane.tls.ca.file="+caFile,
		"--dataplane.sasl.mechanism=PLAIN", "--dataplane.sasl.username=coordhost", "--dataplane.sasl.password=coordpw",
		"--dataplane.offsets.identity=coordhost") // PLAIN: no delegation-token logins

	ctx := timeout(t)
	alice := kgo.SASL(scram.Auth{User: "alice", Pass: "alicepw"}.AsSha256Mechanism())
	p, err := kgo.NewClient(kgo.SeedBrokers(srv.KafkaAddr()), alice, kgo.DefaultProduceTopic("secure"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.ProduceSync(ctx, &kgo.Record{Partition: 1, Value: []byte("secret")}).FirstErr(); err != nil {
		t.Fatalf("authenticated produce through coordhost: %v", err)
	}
	c, err := kgo.NewClient(kgo.SeedBrokers(srv.KafkaAddr()), alice, kgo.FetchMaxWait(250*time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"secure": {1: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got []string
	for len(got) < 1 {
		fs := c.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("nothing consumed before timeout")
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if got[0] != "secret" {
		t.Fatalf("consumed %v", got)
	}
	if dp.saw(kmsg.SASLAuthenticate) == 0 {
		t.Fatal("no SaslAuthenticate reached the cluster")
	}

	anon := dialRaw(t, srv.KafkaAddr())
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	anon.c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, 1))
	if _, err := anon.br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("unauthenticated Metadata: want the connection closed, got %v", err)
	}
}
