package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

// certDetails is one certificate of /certs.
type certDetails struct {
	Path                string              `json:"path"`
	SerialNumber        string              `json:"serial_number"`
	SubjectAltNames     []map[string]string `json:"subject_alt_names"`
	DaysUntilExpiration string              `json:"days_until_expiration"`
	ValidFrom           string              `json:"valid_from"`
	ExpirationTime      string              `json:"expiration_time"`
}

// certsDump is the /certs answer.
type certsDump struct {
	Certificates []struct {
		CaCert    []certDetails `json:"ca_cert"`
		CertChain []certDetails `json:"cert_chain"`
	} `json:"certificates"`
}

var _ = Describe("/certs", func() {
	It("lists every context's certificates with Envoy's fields, sets days_until_first_cert_expiring and redacts inline keys in /config_dump", func() {
		dir := newDir()
		now := time.Now()
		days := func(n int) time.Time { return now.Add(time.Duration(n)*24*time.Hour + time.Hour) }
		ca, err := tlstest.NewCAUntil("certs CA", days(30))
		Expect(err).NotTo(HaveOccurred())
		srv, err := ca.Issue(tlstest.Options{CommonName: "localhost", DNS: []string{"localhost"}, URIs: []string{serverSAN}, NotAfter: days(10)})
		Expect(err).NotTo(HaveOccurred())
		cli, err := ca.Issue(tlstest.Options{CommonName: "frontend", URIs: []string{clientSAN}, Client: true, NotAfter: days(20)})
		Expect(err).NotTo(HaveOccurred())
		w := func(name string, b []byte) string {
			p := filepath.Join(dir, name)
			Expect(os.WriteFile(p, b, 0o600)).To(Succeed())
			return p
		}
		caFile, srvCert, srvKey, cliCert := w("ca.pem", ca.PEM), w("server.pem", srv.CertPEM), w("server-key.pem", srv.KeyPEM), w("client.pem", cli.CertPEM)

		port := freePort()
		chain := `{filters: [` + directHCM("certs", "") + `], transport_socket: {name: envoy.transport_sockets.tls, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext,
  common_tls_context: {tls_certificates: [{certificate_chain: {filename: ` + srvCert + `}, private_key: {filename: ` + srvKey + `}}]}}}}`
		keyJSON, err := json.Marshal(string(cli.KeyPEM))
		Expect(err).NotTo(HaveOccurred())
		ts := upstreamTLS(`, common_tls_context: {tls_certificates: [{certificate_chain: {filename: ` + cliCert + `}, private_key: {inline_string: ` + string(keyJSON) + `}}],
  validation_context: {trusted_ca: {filename: ` + caFile + `}}}`)
		s := Start(dir, tlsBootstrap(port, "", []string{chain}, tlsCluster("upstream", freePort(), ts, "")))

		r := s.Get("/certs")
		Expect(r.Status).To(Equal(200))
		var got certsDump
		Expect(json.Unmarshal([]byte(r.Body), &got)).To(Succeed(), r.Body)
		Expect(got.Certificates).To(HaveLen(2), r.Body)
		stamp := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }

		// The cluster's context first: its CA and its client certificate.
		up := got.Certificates[0]
		Expect(up.CaCert).To(Equal([]certDetails{{
			Path: caFile, SerialNumber: ca.Cert.SerialNumber.Text(16), DaysUntilExpiration: "30", SubjectAltNames: []map[string]string{},
			ValidFrom: stamp(ca.Cert.NotBefore), ExpirationTime: stamp(ca.Cert.NotAfter),
		}}))
		Expect(up.CertChain).To(Equal([]certDetails{{
			Path: cliCert, SerialNumber: cli.Cert.SerialNumber.Text(16), DaysUntilExpiration: "20",
			SubjectAltNames: []map[string]string{{"uri": clientSAN}},
			ValidFrom:       stamp(cli.Cert.NotBefore), ExpirationTime: stamp(cli.Cert.NotAfter),
		}}))
		// The listener's: no CA, the server certificate.
		down := got.Certificates[1]
		Expect(down.CaCert).To(BeEmpty())
		Expect(r.Body).To(ContainSubstring(`"ca_cert": [],`))
		Expect(down.CertChain).To(Equal([]certDetails{{
			Path: srvCert, SerialNumber: srv.Cert.SerialNumber.Text(16), DaysUntilExpiration: "10",
			SubjectAltNames: []map[string]string{{"uri": serverSAN}, {"dns": "localhost"}},
			ValidFrom:       stamp(srv.Cert.NotBefore), ExpirationTime: stamp(srv.Cert.NotAfter),
		}}))

		Eventually(func() string { return statValue(s, "server.days_until_first_cert_expiring") }).Should(Equal("10"))

		dump := s.Get("/config_dump?resource=static_clusters").Body
		Expect(dump).To(ContainSubstring(`"private_key": {`))
		Expect(dump).To(ContainSubstring(`"inline_string": "[redacted]"`))
		Expect(dump).NotTo(ContainSubstring("PRIVATE KEY"))
		Expect(dump).To(ContainSubstring(fmt.Sprintf(`"filename": %q`, cliCert)))
		Expect(strings.Count(dump, "[redacted]")).To(Equal(1))
	})
})
