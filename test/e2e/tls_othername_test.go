package e2e

import (
	"crypto/tls"
	"encoding/asn1"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

var _ = Describe("TLS otherName subject alt names", func() {
	It("accepts a client whose otherName SAN (a UPN) matches an OTHER_NAME matcher and refuses another, counting fail_verify_san", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		ca, err := tlstest.NewCA("UPN CA")
		Expect(err).NotTo(HaveOccurred())
		caFile := filepath.Join(dir, "upn-ca.pem")
		writeFile(caFile, string(ca.PEM))
		upn := asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 311, 20, 2, 3}
		issue := func(user string) tls.Certificate {
			leaf, err := ca.Issue(tlstest.Options{CommonName: user, Client: true, OtherNames: []tlstest.OtherName{{OID: upn, Value: user + "@corp.example"}}})
			Expect(err).NotTo(HaveOccurred())
			c, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
			Expect(err).NotTo(HaveOccurred())
			return c
		}
		port := freePort()
		chain := `{filters: [` + directHCM("upn", "") + `],
  transport_socket: {name: envoy.transport_sockets.tls, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext, require_client_certificate: true,
    common_tls_context: {tls_certificates: [{certificate_chain: {filename: ` + f.cert + `}, private_key: {filename: ` + f.key + `}}],
      validation_context: {trusted_ca: {filename: ` + caFile + `}, match_typed_subject_alt_names: [{san_type: OTHER_NAME, oid: "1.3.6.1.4.1.311.20.2.3", matcher: {exact: alice@corp.example}}]}}}}}`
		s := Start(dir, tlsBootstrap(port, "", []string{chain}))
		get := func(cert tls.Certificate) error {
			client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
				RootCAs: f.caPool, ServerName: "localhost", Certificates: []tls.Certificate{cert}}}}
			resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/", port))
			if err == nil {
				resp.Body.Close()
			}
			return err
		}
		Expect(get(issue("alice"))).To(Succeed())
		Expect(get(issue("bob"))).NotTo(Succeed())
		Expect(statValue(s, fmt.Sprintf("listener.127.0.0.1_%d.ssl.fail_verify_san", port))).To(Equal("1"))
		Expect(statValue(s, fmt.Sprintf("listener.127.0.0.1_%d.ssl.handshake", port))).To(Equal("1"))
	})
})
