package host_test

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/coordhost/coordhost/internal/testtool"
)

// TestKafkaListenerRequiresClientCertificate: with kafka.tls.client.ca.file
// a client with a certificate the CA signed is served; one without a
// certificate is not.
func TestKafkaListenerRequiresClientCertificate(t *testing.T) {
	dir := t.TempDir()
	pki := testtool.NewPKI(t, "test CA")
	certFile, keyFile := testtool.WriteCert(t, dir, "server", pki.Issue(t, pkix.Name{CommonName: "coordhost"}))
	client := pki.Issue(t, pkix.Name{CommonName: "alice"})
	srv := startHost(t, "", "--kafka.tls.cert.file="+certFile, "--kafka.tls.key.file="+keyFile, "--kafka.tls.client.ca.file="+pki.WriteCA(t, dir))
	produce := func(certs []tls.Certificate) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(srv.KafkaAddr()), kgo.DialTLSConfig(&tls.Config{RootCAs: pki.Pool, Certificates: certs}),
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
