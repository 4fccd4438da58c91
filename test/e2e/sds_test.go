package e2e

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	cachetypes "github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

// inline is a DataSource holding b inline.
func inline(b []byte) *corev3.DataSource {
	return &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: string(b)}}
}

// certSecret is a TLS certificate secret with the certificate and key
// inline.
func certSecret(name string, certPEM, keyPEM []byte) *tlsv3.Secret {
	return &tlsv3.Secret{Name: name, Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{
		CertificateChain: inline(certPEM), PrivateKey: inline(keyPEM),
	}}}
}

// caSecret is a validation context secret trusting the CA caPEM.
func caSecret(name string, caPEM []byte) *tlsv3.Secret {
	return &tlsv3.Secret{Name: name, Type: &tlsv3.Secret_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
		TrustedCa: inline(caPEM),
	}}}
}

// sdsSnapshot is a snapshot of version holding secrets, and clusters and
// listeners when given.
func sdsSnapshot(version string, secrets []*tlsv3.Secret, cs []*clusterv3.Cluster, ls []*listenerv3.Listener) *cachev3.Snapshot {
	GinkgoHelper()
	res := map[resourcev3.Type][]cachetypes.Resource{resourcev3.SecretType: {}}
	for _, sec := range secrets {
		res[resourcev3.SecretType] = append(res[resourcev3.SecretType], sec)
	}
	for _, c := range cs {
		res[resourcev3.ClusterType] = append(res[resourcev3.ClusterType], c)
	}
	for _, l := range ls {
		res[resourcev3.ListenerType] = append(res[resourcev3.ListenerType], l)
	}
	snap, err := cachev3.NewSnapshot(version, res)
	Expect(err).NotTo(HaveOccurred())
	return snap
}

// fromYAML decodes a resource from YAML (flow) into out, and returns it.
func fromYAML[M proto.Message](y string, out M) M {
	GinkgoHelper()
	js, err := yaml.YAMLToJSON([]byte(y))
	Expect(err).NotTo(HaveOccurred())
	Expect(protojson.Unmarshal(js, out)).To(Succeed())
	return out
}

// serialOf is the serial number (hex) of the first certificate in the
// PEM file path.
func serialOf(path string) string {
	GinkgoHelper()
	certs, err := tlsconfig.ParseCertificates([]byte(readFile(path)))
	Expect(err).NotTo(HaveOccurred())
	return certs[0].SerialNumber.Text(16)
}

// xdsClusterYAML is the static cluster "xds" (HTTP/2) to the management
// server on port, as YAML flow.
func xdsClusterYAML(port int) string {
	GinkgoHelper()
	b, err := json.Marshal(proxyCluster{Name: "xds", Port: port, Extra: h2cOptions()}.object())
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

// grpcSource is an api_config_source to the xds cluster (YAML flow).
func grpcSource(apiType, extra string) string {
	return `{api_type: ` + apiType + `, transport_api_version: V3, grpc_services: [{envoy_grpc: {cluster_name: xds}}]` + extra + `}`
}

// dialKeptTLS opens a TLS connection to a listener on port, kept open
// across updates, closed when the spec ends.
func dialKeptTLS(port int, f *tlsFiles) (*keptConn, *tls.Conn) {
	GinkgoHelper()
	c, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{RootCAs: f.caPool, ServerName: "localhost"})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(c.Close)
	return &keptConn{conn: c, r: bufio.NewReader(c)}, c
}

// withTransportSocket adds a transport socket (YAML flow) to a filter
// chain (YAML flow).
func withTransportSocket(chain, ts string) string {
	return strings.TrimSuffix(chain, "}") + ", transport_socket: " + ts + "}"
}

var _ = Describe("SDS: secrets from a management server over gRPC", func() {
	It("warms a listener and a cluster until their secrets come over ADS, rotates the listener's certificate without dropping a connection, NACKs a bad one, and redacts the secrets in /config_dump", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		ca, err := tlstest.NewCA("rotation CA")
		Expect(err).NotTo(HaveOccurred())
		second, err := ca.Issue(tlstest.Options{CommonName: "localhost", DNS: []string{"localhost"}})
		Expect(err).NotTo(HaveOccurred())
		f.caPool.AddCert(ca.Cert)
		up := startTLSUpstream(f, false)

		m := startManagementServer()
		port := freePort()
		chain := withTransportSocket(routeToCluster("ingress", "up"), `{name: envoy.transport_sockets.tls, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext,
    common_tls_context: {tls_certificate_sds_secret_configs: [{name: server_cert, sds_config: {ads: {}, resource_api_version: V3}}]}}}`)
		ts := upstreamTLS(`, sni: localhost, common_tls_context: {combined_validation_context: {
  default_validation_context: {match_typed_subject_alt_names: [{san_type: URI, matcher: {exact: "` + serverSAN + `"}}]},
  validation_context_sds_secret_config: {name: mesh_ca, sds_config: {ads: {}, resource_api_version: V3, initial_fetch_timeout: 0s}}}}`)
		cfg := tlsBootstrap(port, "", []string{chain}, xdsClusterYAML(m.port), tlsCluster("up", up, ts, "")) + `
node: {id: ` + adsNodeID + `, cluster: e2e}
dynamic_resources:
  ads_config: ` + grpcSource("GRPC", "") + `
`
		s := Launch(dir, "bootstrap.yaml", cfg)
		s.WaitForAdmin()

		// No secret yet: the cluster and the listener warm, and the
		// server stays INITIALIZING.
		Consistently(func() int { return s.Get("/ready").Status }, time.Second).Should(Equal(503))
		Expect(s.Get("/config_dump?resource=dynamic_warming_secrets").Body).To(ContainSubstring(`"version_info": "uninitialized"`))
		Expect(s.Get("/init_dump").Body).To(ContainSubstring("SdsApi server_cert"))

		m.set(sdsSnapshot("v1", []*tlsv3.Secret{certSecret("server_cert", []byte(readFile(f.cert)), []byte(readFile(f.key))), caSecret("mesh_ca", []byte(readFile(f.ca)))}, nil, nil))
		waitLive(s)
		Expect(servedSerial(port, f)).To(Equal(serialOf(f.cert)))
		Expect(statValue(s, "sds.server_cert.update_success")).To(Equal("1"))
		Expect(statValue(s, "sds.mesh_ca.update_success")).To(Equal("1"))
		Expect(statValue(s, "sds.server_cert.version_text")).To(Equal(`"v1"`))
		Expect(statValue(s, "sds.server_cert.init_fetch_timeout")).To(Equal("0"))
		Expect(s.Get("/init_dump").Body).NotTo(ContainSubstring("SdsApi"))

		// Through the listener to the upstream, whose certificate is
		// checked against the validation context from SDS.
		kept, keptTLS := dialKeptTLS(port, f)
		Expect(kept.get()).To(HavePrefix("sni=localhost"))
		Expect(statValue(s, "cluster.up.ssl.handshake")).To(Equal("1"))

		dump := s.Get("/config_dump?resource=dynamic_active_secrets").Body
		Expect(dump).To(ContainSubstring(`"name": "server_cert"`))
		Expect(dump).To(ContainSubstring(`"name": "mesh_ca"`))
		Expect(dump).To(ContainSubstring(`"version_info": "v1"`))
		Expect(dump).To(ContainSubstring(`"inline_string": "[redacted]"`))
		Expect(dump).NotTo(ContainSubstring("PRIVATE KEY"))
		Expect(dump).To(ContainSubstring("BEGIN CERTIFICATE"), "certificates are not secret")

		// A rotation: new handshakes get the new certificate, the open
		// connection goes on, /certs shows it.
		m.set(sdsSnapshot("v2", []*tlsv3.Secret{certSecret("server_cert", second.CertPEM, second.KeyPEM), caSecret("mesh_ca", []byte(readFile(f.ca)))}, nil, nil))
		want := second.Cert.SerialNumber.Text(16)
		Eventually(func() string { return servedSerial(port, f) }, 10*time.Second, 50*time.Millisecond).Should(Equal(want))
		Expect(kept.get()).To(HavePrefix("sni=localhost"))
		Expect(keptTLS.ConnectionState().PeerCertificates[0].SerialNumber.Text(16)).To(Equal(serialOf(f.cert)))
		Expect(s.Get("/certs").Body).To(ContainSubstring(want))
		waitStat(s, "sds.server_cert.version_text", `"v2"`)
		Expect(statValue(s, "sds.server_cert.update_success")).To(Equal("2"))

		// A certificate that does not parse: NACKed, counted; the
		// rotated certificate stays.
		m.set(sdsSnapshot("v3", []*tlsv3.Secret{certSecret("server_cert", []byte("not a certificate"), second.KeyPEM), caSecret("mesh_ca", []byte(readFile(f.ca)))}, nil, nil))
		Eventually(func() string { return statValue(s, "sds.server_cert.update_rejected") }, 10*time.Second).ShouldNot(Equal("0"))
		Expect(servedSerial(port, f)).To(Equal(want))
		Expect(kept.get()).To(HavePrefix("sni=localhost"))
		Expect(statValue(s, "sds.server_cert.version_text")).To(Equal(`"v2"`))
		Eventually(func() bool {
			for _, r := range m.received() {
				if r.GetTypeUrl() == resourcev3.SecretType && strings.Contains(r.GetErrorDetail().GetMessage(), "server_cert") {
					return true
				}
			}
			return false
		}).Should(BeTrue(), "a NACK naming the secret")
	})

	It("starts without a secret that does not come within its initial_fetch_timeout, refusing TLS handshakes until it comes", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		m := startManagementServer()
		port := freePort()
		chain := withTransportSocket(routeToCluster("late", "xds"), `{name: envoy.transport_sockets.tls, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext,
    common_tls_context: {tls_certificate_sds_secret_configs: [{name: late_cert, sds_config: {ads: {}, resource_api_version: V3, initial_fetch_timeout: 0.5s}}]}}}`)
		cfg := tlsBootstrap(port, "", []string{chain}, xdsClusterYAML(m.port)) + `
node: {id: ` + adsNodeID + `, cluster: e2e}
dynamic_resources:
  ads_config: ` + grpcSource("DELTA_GRPC", "") + `
`
		s := Start(dir, cfg)
		waitLive(s)
		Expect(statValue(s, "sds.late_cert.init_fetch_timeout")).To(Equal("1"))
		_, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{RootCAs: f.caPool, ServerName: "localhost"})
		Expect(err).To(HaveOccurred(), "no certificate to serve yet")

		m.set(sdsSnapshot("v1", []*tlsv3.Secret{certSecret("late_cert", []byte(readFile(f.cert)), []byte(readFile(f.key)))}, nil, nil))
		Eventually(func() error {
			c, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{RootCAs: f.caPool, ServerName: "localhost"})
			if err == nil {
				_ = c.Close()
			}
			return err
		}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
		Expect(statValue(s, "sds.late_cert.update_success")).To(Equal("1"))
		Expect(s.Get("/certs").Body).To(ContainSubstring(serialOf(f.cert)))
	})

	It("takes clusters, their endpoints, listeners, a listener's routes and its certificate each on a stream of its own (api_config_source), with rate_limit_settings", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		m := startManagementServer()
		backend := startNamed("B")
		port := freePort()

		src := ownSources{port: port, f: f, eds: grpcSource("DELTA_GRPC", ""), rds: grpcSource("GRPC", ""), sds: grpcSource("DELTA_GRPC", "")}
		snap := src.snapshot("v1", []*clusterv3.Cluster{src.cluster()}, backend)
		m.set(snap)

		cfg := fmt.Sprintf(`
node: {id: %s, cluster: e2e}
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
static_resources: {clusters: [%s]}
dynamic_resources:
  cds_config: {api_config_source: %s, resource_api_version: V3}
  lds_config: {api_config_source: %s, resource_api_version: V3}
`, adsNodeID, xdsClusterYAML(m.port), grpcSource("GRPC", ", rate_limit_settings: {max_tokens: 1, fill_rate: 2}"), grpcSource("DELTA_GRPC", ""))
		s := Start(dir, cfg)
		waitLive(s)

		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.caPool, ServerName: "localhost"}}}
		r := httpDo(client, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/", port), nil, nil)
		Expect(r.Status).To(Equal(200), r.Body)
		Expect(r.Body).To(Equal("B"))

		// Each on its own service's stream, none on the aggregated one.
		Expect(m.streamMethods()).To(ContainElements(
			"/envoy.service.cluster.v3.ClusterDiscoveryService/StreamClusters",
			"/envoy.service.listener.v3.ListenerDiscoveryService/DeltaListeners",
			"/envoy.service.secret.v3.SecretDiscoveryService/DeltaSecrets",
			"/envoy.service.route.v3.RouteDiscoveryService/StreamRoutes",
			"/envoy.service.endpoint.v3.EndpointDiscoveryService/DeltaEndpoints",
		))
		Expect(m.streamMethods()).NotTo(ContainElement(ContainSubstring("AggregatedDiscoveryService")))
		Expect(statValue(s, "cluster_manager.cds.update_success")).To(Equal("1"))
		Expect(statValue(s, "listener_manager.lds.update_success")).To(Equal("1"))
		Expect(statValue(s, "sds.web_cert.update_success")).To(Equal("1"))
		Expect(statValue(s, "http.web.rds.web-routes.update_success")).To(Equal("1"))
		Expect(statValue(s, "cluster.backend.update_success")).To(Equal("1"))
		Expect(s.Get("/clusters").Body).To(ContainSubstring("backend::added_via_api::true"))

		// The cluster stream's bucket holds one token: its ACK had to
		// wait for the next one.
		Eventually(func() string { return statValue(s, "control_plane.rate_limit_enforced") }).ShouldNot(Equal("0"))
		Eventually(func() string { return statValue(s, "control_plane.pending_requests") }).Should(Equal("0"))
	})
})
