package e2e

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

// sdsResponse is a DiscoveryResponse file (YAML) holding one TLS
// certificate secret, its fields given as YAML flow.
func sdsResponse(version, name, tlsCertificate string) string {
	return fmt.Sprintf(`version_info: "%s"
resources:
- "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret
  name: %s
  tls_certificate: %s
`, version, name, tlsCertificate)
}

// replaceFile replaces path with content atomically (a temporary file
// moved over it), as a control plane or a Secret volume update does.
func replaceFile(path, content string) {
	GinkgoHelper()
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	Expect(err).NotTo(HaveOccurred())
	_, err = tmp.WriteString(content)
	Expect(err).NotTo(HaveOccurred())
	Expect(tmp.Close()).To(Succeed())
	Expect(os.Rename(tmp.Name(), path)).To(Succeed())
}

// servedSerial opens a TLS connection to port and returns the serial of
// the certificate served.
func servedSerial(port int, f *tlsFiles) string {
	GinkgoHelper()
	c, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{RootCAs: f.caPool, ServerName: "localhost"})
	Expect(err).NotTo(HaveOccurred())
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.Text(16)
}

// secretVolume lays out files as the kubelet does in a Secret volume:
// each key a symlink to ..data/<key>, ..data a symlink to a timestamped
// folder. Called again, it swaps ..data atomically to a new folder, as the
// kubelet does when the Secret changes.
func secretVolume(dir, version string, files map[string][]byte) {
	GinkgoHelper()
	ts := filepath.Join(dir, "..2026_"+version)
	Expect(os.MkdirAll(ts, 0o700)).To(Succeed())
	for k, b := range files {
		Expect(os.WriteFile(filepath.Join(ts, k), b, 0o600)).To(Succeed())
		link := filepath.Join(dir, k)
		if _, err := os.Lstat(link); err != nil {
			Expect(os.Symlink(filepath.Join("..data", k), link)).To(Succeed())
		}
	}
	tmp := filepath.Join(dir, "..data_tmp")
	Expect(os.Symlink(filepath.Base(ts), tmp)).To(Succeed())
	Expect(os.Rename(tmp, filepath.Join(dir, "..data"))).To(Succeed())
}

// mountedSecret is a Kubernetes-style Secret volume (mount/..data) holding
// the spec's server certificate and key, a CA the spec's client trusts
// that issues its renewals, and an SDS file in a directory of its own
// naming the volume's files.
type mountedSecret struct {
	dir, mount, sdsFile string
	f                   *tlsFiles
	ca                  *tlstest.CA
}

// newMountedSecret makes the volume and the SDS file; extra (given the
// mount's path) is appended to the secret's tls_certificate fields.
func newMountedSecret(caName string, extra func(mount string) string) mountedSecret {
	GinkgoHelper()
	m := mountedSecret{dir: newDir()}
	m.f = newTLSFiles(m.dir)
	ca, err := tlstest.NewCA(caName)
	Expect(err).NotTo(HaveOccurred())
	m.ca = ca
	m.f.caPool.AddCert(ca.Cert)
	m.mount = filepath.Join(m.dir, "tls")
	Expect(os.MkdirAll(m.mount, 0o700)).To(Succeed())
	secretVolume(m.mount, "1", map[string][]byte{"tls.crt": []byte(readFile(m.f.cert)), "tls.key": []byte(readFile(m.f.key))})
	sdsDir := filepath.Join(m.dir, "sds")
	Expect(os.MkdirAll(sdsDir, 0o700)).To(Succeed())
	m.sdsFile = filepath.Join(sdsDir, "sds.yaml")
	writeFile(m.sdsFile, sdsResponse("1", "server_cert", `{certificate_chain: {filename: `+m.mount+`/tls.crt}, private_key: {filename: `+m.mount+`/tls.key}`+extra(m.mount)+`}`))
	return m
}

// issue is a new localhost certificate of the secret's CA.
func (m mountedSecret) issue() *tlstest.Leaf {
	GinkgoHelper()
	c, err := m.ca.Issue(tlstest.Options{CommonName: "localhost", DNS: []string{"localhost"}})
	Expect(err).NotTo(HaveOccurred())
	return c
}

var _ = Describe("TLS secrets", func() {
	It("follows a mounted Secret's files named by an unchanged SDS file, through watched_directory", func() {
		m := newMountedSecret("renewal CA", func(string) string { return "" })
		dir, f, mount, sdsFile := m.dir, m.f, m.mount, m.sdsFile
		renewed := m.issue()
		port := freePort()
		chain := `{filters: [` + directHCM("renewed", "") + `],
  transport_socket: {name: envoy.transport_sockets.tls, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext,
    common_tls_context: {tls_certificate_sds_secret_configs: [{name: server_cert, sds_config: {path_config_source: {path: ` + sdsFile + `, watched_directory: {path: ` + mount + `}}}}]}}}}`
		s := Start(dir, tlsBootstrap(port, "", []string{chain}))
		first := servedSerial(port, f)
		Expect(statValue(s, "sds.server_cert.update_success")).To(Equal("1"))

		// The kubelet swaps ..data: the SDS file is the same, the files
		// it names are not.
		secretVolume(mount, "2", map[string][]byte{"tls.crt": renewed.CertPEM, "tls.key": renewed.KeyPEM})
		want := renewed.Cert.SerialNumber.Text(16)
		Expect(want).NotTo(Equal(first))
		Eventually(func() string { return servedSerial(port, f) }, 5*time.Second, 50*time.Millisecond).Should(Equal(want))
		Expect(s.Get("/certs").Body).To(ContainSubstring(want))

		// A swap to files that do not parse is rejected and counted; the
		// renewed certificate stays.
		secretVolume(mount, "3", map[string][]byte{"tls.crt": []byte("not a certificate"), "tls.key": renewed.KeyPEM})
		// (Each later move in the folder tries the files again: at least one
		// rejection.)
		Eventually(func() string { return statValue(s, "sds.server_cert.update_rejected") }, 5*time.Second).Should(MatchRegexp(`^[1-9]`))
		Expect(servedSerial(port, f)).To(Equal(want))
	})

	It("takes certificates and validation contexts from static secrets by name, on listeners and clusters, redacted in /config_dump", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		mtls := startTLSUpstream(f, true)
		keyJSON, err := json.Marshal(readFile(f.clientKey))
		Expect(err).NotTo(HaveOccurred())
		port := freePort()
		chain := `{filters: [` + routingHCM("SECLOG %RESPONSE_CODE% %DOWNSTREAM_PEER_URI_SAN%", "mtls") + `],
  transport_socket: {name: envoy.transport_sockets.tls, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext, require_client_certificate: true,
    common_tls_context: {tls_certificate_sds_secret_configs: [{name: server_cert}], validation_context_sds_secret_config: {name: mesh_ca}}}}}`
		ts := upstreamTLS(`, common_tls_context: {tls_certificate_sds_secret_configs: [{name: client_cert}],
  combined_validation_context: {default_validation_context: {match_typed_subject_alt_names: [{san_type: URI, matcher: {exact: "` + serverSAN + `"}}]}, validation_context_sds_secret_config: {name: mesh_ca}}}`)
		cfg := tlsBootstrap(port, "", []string{chain}, tlsCluster("mtls", mtls, ts, "")) + `
  secrets:
  - {name: client_cert, tls_certificate: {certificate_chain: {filename: ` + f.clientCert + `}, private_key: {inline_string: ` + string(keyJSON) + `}}}
  - {name: server_cert, tls_certificate: {certificate_chain: {filename: ` + f.cert + `}, private_key: {filename: ` + f.key + `}}}
  - {name: mesh_ca, validation_context: {trusted_ca: {filename: ` + f.ca + `}}}
`
		s := Start(dir, cfg, "--file-flush-interval-msec", "50")

		cert, err := tls.LoadX509KeyPair(f.clientCert, f.clientKey)
		Expect(err).NotTo(HaveOccurred())
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs: f.caPool, ServerName: "localhost", Certificates: []tls.Certificate{cert},
		}}}
		r := httpDo(client, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/mtls", port), nil, nil)
		Expect(r.Status).To(Equal(200), r.Body)
		Expect(r.Body).To(HaveSuffix("peer=" + clientSAN))
		Eventually(s.Stdout).Should(ContainSubstring("SECLOG 200 " + clientSAN + "\n"))
		Expect(statValue(s, "cluster.mtls.ssl.handshake")).To(Equal("1"))

		dump := s.Get("/config_dump?resource=static_secrets").Body
		Expect(dump).To(ContainSubstring(`"name": "client_cert"`))
		Expect(dump).To(ContainSubstring(`"name": "mesh_ca"`))
		Expect(dump).To(ContainSubstring(`"inline_string": "[redacted]"`))
		Expect(dump).NotTo(ContainSubstring("PRIVATE KEY"))
		Expect(dump).NotTo(ContainSubstring(`"filename": "` + f.key + `"`))

		// An unknown name is a configuration error naming the field.
		bad := filepath.Join(dir, "bad.yaml")
		Expect(os.WriteFile(bad, []byte(strings.Replace(cfg, "{name: mesh_ca}}}}}", "{name: nowhere}}}}}", 1)), 0o600)).To(Succeed())
		res := Run("--mode", "validate", "-c", bad)
		Expect(res.ExitCode).To(Equal(1))
		Expect(res.Stderr).To(ContainSubstring("static_resources.clusters[0].transport_socket.typed_config.common_tls_context.combined_validation_context.validation_context_sds_secret_config.name: Unknown static secret: nowhere"))
	})

	It("follows a certificate in an SDS file: new handshakes get a rotation within a bounded time, open connections go on, a bad rotation is rejected and counted", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		ca, err := tlstest.NewCA("rotation CA")
		Expect(err).NotTo(HaveOccurred())
		second, err := ca.Issue(tlstest.Options{CommonName: "localhost", DNS: []string{"localhost"}})
		Expect(err).NotTo(HaveOccurred())
		f.caPool.AddCert(ca.Cert)
		cert2, key2 := filepath.Join(dir, "second.pem"), filepath.Join(dir, "second-key.pem")
		writeFile(cert2, string(second.CertPEM))
		writeFile(key2, string(second.KeyPEM))
		sdsDir := filepath.Join(dir, "sds")
		Expect(os.MkdirAll(sdsDir, 0o700)).To(Succeed())
		sdsFile := filepath.Join(sdsDir, "sds.yaml")
		writeFile(sdsFile, sdsResponse("1", "server_cert", `{certificate_chain: {filename: `+f.cert+`}, private_key: {filename: `+f.key+`}}`))

		port := freePort()
		chain := `{filters: [` + directHCM("rotated", "") + `],
  transport_socket: {name: envoy.transport_sockets.tls, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext,
    common_tls_context: {tls_certificate_sds_secret_configs: [{name: server_cert, sds_config: {path_config_source: {path: ` + sdsFile + `}}}]}}}}`
		s := Start(dir, tlsBootstrap(port, "", []string{chain}))
		first := servedSerial(port, f)
		Expect(s.Get("/certs").Body).To(ContainSubstring(first))
		Expect(statValue(s, "sds.server_cert.update_success")).To(Equal("1"))

		// A connection open across the rotation.
		kept, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{RootCAs: f.caPool, ServerName: "localhost"})
		Expect(err).NotTo(HaveOccurred())
		defer kept.Close()
		keptReader := bufio.NewReader(kept)
		ask := func() int {
			Expect(kept.SetDeadline(time.Now().Add(10 * time.Second))).To(Succeed())
			_, err := kept.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
			Expect(err).NotTo(HaveOccurred())
			resp, err := http.ReadResponse(keptReader, nil)
			Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			return resp.StatusCode
		}
		Expect(ask()).To(Equal(200))

		replaceFile(sdsFile, sdsResponse("2", "server_cert", `{certificate_chain: {filename: `+cert2+`}, private_key: {filename: `+key2+`}}`))
		want := second.Cert.SerialNumber.Text(16)
		Eventually(func() string { return servedSerial(port, f) }, 5*time.Second, 50*time.Millisecond).Should(Equal(want))
		Expect(ask()).To(Equal(200))
		Expect(kept.ConnectionState().PeerCertificates[0].SerialNumber.Text(16)).To(Equal(first))
		Expect(statValue(s, "sds.server_cert.update_success")).To(Equal("2"))
		Expect(s.Get("/certs").Body).To(ContainSubstring(want))
		dump := s.Get("/config_dump?resource=dynamic_active_secrets").Body
		Expect(dump).To(ContainSubstring(`"version_info": "2"`))
		Expect(dump).To(ContainSubstring(`"filename": "` + cert2 + `"`))
		Expect(dump).NotTo(ContainSubstring(key2))

		// A certificate that does not parse: rejected, counted, logged;
		// the rotated certificate stays.
		replaceFile(sdsFile, sdsResponse("3", "server_cert", `{certificate_chain: {inline_string: "not a certificate"}, private_key: {filename: `+key2+`}}`))
		Eventually(func() string { return statValue(s, "sds.server_cert.update_rejected") }, 5*time.Second).Should(Equal("1"))
		Expect(servedSerial(port, f)).To(Equal(want))
		Expect(ask()).To(Equal(200))
		Eventually(s.Stderr).Should(ContainSubstring("filesystem config update rejected"))
	})
})
