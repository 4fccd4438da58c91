package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachetypes "github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"
)

// restRequest is one REST discovery request as the management server
// received it.
type restRequest struct {
	path, host, contentType string
	req                     *discoveryv3.DiscoveryRequest
	status                  int
}

// restManagementServer is go-control-plane's REST gateway (HTTPGateway)
// in front of its xDS server and a snapshot cache, on a loopback port,
// recording every request.
type restManagementServer struct {
	port  int
	cache cachev3.SnapshotCache
	srv   *http.Server

	mu       sync.Mutex
	requests []restRequest
}

// startRESTManagementServer serves the REST discovery endpoints until
// the spec ends (or stop).
func startRESTManagementServer() *restManagementServer {
	GinkgoHelper()
	m := &restManagementServer{cache: cachev3.NewSnapshotCache(false, cachev3.IDHash{}, nil)}
	gw := &serverv3.HTTPGateway{Server: serverv3.NewServer(context.Background(), m.cache, nil)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	m.port = ln.Addr().(*net.TCPAddr).Port
	m.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rec := restRequest{path: r.URL.Path, host: r.Host, contentType: r.Header.Get("Content-Type"), req: &discoveryv3.DiscoveryRequest{}}
		_ = protojson.Unmarshal(body, rec.req)
		r.Body = io.NopCloser(bytes.NewReader(body))
		out, code, err := gw.ServeHTTP(r)
		rec.status = code
		m.mu.Lock()
		m.requests = append(m.requests, rec)
		m.mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), code)
			return
		}
		if code == http.StatusOK {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(code)
		_, _ = w.Write(out)
	})}
	go func() { _ = m.srv.Serve(ln) }()
	DeferCleanup(m.stop)
	return m
}

// stop ends the server: the management server goes away.
func (m *restManagementServer) stop() { _ = m.srv.Close() }

// set makes snap the node's configuration.
func (m *restManagementServer) set(snap *cachev3.Snapshot) {
	GinkgoHelper()
	Expect(m.cache.SetSnapshot(context.Background(), adsNodeID, snap)).To(Succeed())
}

// received returns the requests received so far whose path ends with
// kind ("clusters", "listeners"...).
func (m *restManagementServer) received(kind string) []restRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(m.requests), func(r restRequest) bool { return !strings.HasSuffix(r.path, ":"+kind) })
}

// xdsHTTP1ClusterYAML is the static cluster "xds" (HTTP/1.1) to the REST
// management server on port, as YAML flow.
func xdsHTTP1ClusterYAML(port int) string {
	GinkgoHelper()
	b, err := json.Marshal(proxyCluster{Name: "xds", Port: port}.object())
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

// ownSources make the resources of the specs whose clusters, endpoints,
// listener, routes and certificate each come from a config source of
// their own: the EDS cluster "backend" (service backend-svc), and the TLS
// listener "web" on port whose routes (web-routes, all to backend) and
// certificate (web_cert, f's) come from their sources. eds, rds and sds
// are the api_config_source values (YAML flow).
type ownSources struct {
	port          int
	f             *tlsFiles
	eds, rds, sds string
}

// cluster is the EDS cluster backend.
func (o ownSources) cluster() *clusterv3.Cluster {
	GinkgoHelper()
	return fromYAML(`{name: backend, type: EDS, connect_timeout: 1s, eds_cluster_config: {service_name: backend-svc, eds_config: {api_config_source: `+o.eds+`, resource_api_version: V3}}}`, &clusterv3.Cluster{})
}

// snapshot is a snapshot of version with the clusters cs, the listener,
// its routes and certificate, and backend-svc's load assignment to the
// loopback port upstream.
func (o ownSources) snapshot(version string, cs []*clusterv3.Cluster, upstream int) *cachev3.Snapshot {
	GinkgoHelper()
	listener := fromYAML(fmt.Sprintf(`{name: web, address: {socket_address: {address: 127.0.0.1, port_value: %d}}, filter_chains: [%s]}`,
		o.port, withTransportSocket(`{filters: [{name: envoy.filters.network.http_connection_manager, typed_config: {`+
			`"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager, stat_prefix: web, `+
			`rds: {route_config_name: web-routes, config_source: {api_config_source: `+o.rds+`, resource_api_version: V3}}, `+
			`http_filters: [{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]}}]}`, `{name: envoy.transport_sockets.tls, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext,
    common_tls_context: {tls_certificate_sds_secret_configs: [{name: web_cert, sds_config: {api_config_source: `+o.sds+`, resource_api_version: V3}}]}}}`)), &listenerv3.Listener{})
	routes := fromYAML(`{name: web-routes, virtual_hosts: [{name: all, domains: ["*"], routes: [{match: {prefix: "/"}, route: {cluster: backend}}]}]}`, &routev3.RouteConfiguration{})
	snap := sdsSnapshot(version, []*tlsv3.Secret{certSecret("web_cert", []byte(readFile(o.f.cert)), []byte(readFile(o.f.key)))}, cs, []*listenerv3.Listener{listener})
	snap.Resources[cachetypes.Route] = cachev3.NewResources(version, []cachetypes.Resource{routes})
	snap.Resources[cachetypes.Endpoint] = cachev3.NewResources(version, []cachetypes.Resource{loadAssignment("backend-svc", edsEndpoint{port: upstream})})
	return snap
}

// restSource is a REST api_config_source polling the xds cluster (YAML
// flow).
func restSource(extra string) string {
	return `{api_type: REST, transport_api_version: V3, cluster_names: [xds], refresh_delay: 0.2s` + extra + `}`
}

var _ = Describe("xDS over REST: clusters, endpoints, listeners, routes and secrets polled from go-control-plane's REST gateway", func() {
	It("serves traffic through resources fetched over REST, picks up an update, rejects a bad cluster with its stats, and keeps the last configuration when the server goes away", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		m := startRESTManagementServer()
		a, b := startNamed("A"), startNamed("B")
		port := freePort()

		src := ownSources{port: port, f: f, eds: restSource(""), rds: restSource(", request_timeout: 5s"), sds: restSource("")}
		edsCluster, snapshot := src.cluster, src.snapshot
		m.set(snapshot("v1", []*clusterv3.Cluster{edsCluster()}, a))

		// The xds cluster speaks HTTP/1.1: REST needs no HTTP/2.
		cfg := fmt.Sprintf(`
node: {id: %s, cluster: e2e}
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
static_resources: {clusters: [%s]}
dynamic_resources:
  cds_config: {api_config_source: %s, resource_api_version: V3, initial_fetch_timeout: 10s}
  lds_config: {api_config_source: %s, resource_api_version: V3}
`, adsNodeID, xdsHTTP1ClusterYAML(m.port), restSource(""), restSource(""))
		s := Start(dir, cfg)
		waitLive(s)

		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{RootCAs: f.caPool, ServerName: "localhost"}}}
		get := func() Response {
			return httpDo(client, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/", port), nil, nil)
		}
		r := get()
		Expect(r.Status).To(Equal(200), r.Body)
		Expect(r.Body).To(Equal("A"))

		// Each type polled its own path with a JSON DiscoveryRequest
		// carrying the node, the names wanted, and the cluster's name as
		// the Host.
		for _, kind := range []string{"clusters", "listeners", "endpoints", "routes", "secrets"} {
			reqs := m.received(kind)
			Expect(reqs).NotTo(BeEmpty(), kind)
			Expect(reqs[0].host).To(Equal("xds"))
			Expect(reqs[0].contentType).To(Equal("application/json"))
			Expect(reqs[0].req.GetNode().GetId()).To(Equal(adsNodeID))
			Expect(reqs[0].req.GetVersionInfo()).To(BeEmpty(), kind+": nothing accepted yet")
		}
		Expect(m.received("endpoints")[0].req.GetResourceNames()).To(Equal([]string{"backend-svc"}))
		Expect(m.received("routes")[0].req.GetResourceNames()).To(Equal([]string{"web-routes"}))
		Expect(m.received("secrets")[0].req.GetResourceNames()).To(Equal([]string{"web_cert"}))
		Expect(m.received("clusters")[0].req.GetResourceNames()).To(BeEmpty())
		Expect(statValue(s, "cluster_manager.cds.update_success")).To(Equal("1"))
		Expect(statValue(s, "cluster_manager.cds.version_text")).To(Equal(`"v1"`))
		Expect(statValue(s, "listener_manager.lds.update_success")).To(Equal("1"))
		Expect(statValue(s, "sds.web_cert.update_success")).To(Equal("1"))
		Expect(statValue(s, "http.web.rds.web-routes.update_success")).To(Equal("1"))
		Expect(statValue(s, "cluster.backend.update_success")).To(Equal("1"))
		Expect(s.Get("/clusters").Body).To(ContainSubstring("backend::added_via_api::true"))

		// Up to date: the next polls carry v1 and get 304, which changes
		// nothing.
		Eventually(func() bool {
			reqs := m.received("clusters")
			last := reqs[len(reqs)-1]
			return last.req.GetVersionInfo() == "v1" && last.status == http.StatusNotModified
		}, 10*time.Second, 50*time.Millisecond).Should(BeTrue())
		Expect(statValue(s, "cluster_manager.cds.update_success")).To(Equal("1"))

		// An update is picked up by the next poll.
		m.set(snapshot("v2", []*clusterv3.Cluster{edsCluster()}, b))
		Eventually(func() string { return get().Body }, 10*time.Second, 50*time.Millisecond).Should(Equal("B"))
		waitStat(s, "cluster_manager.cds.version_text", `"v2"`)

		// A bad cluster is rejected: nothing of the response applies, the
		// next polls carry the last accepted version, traffic is as it
		// was.
		bad := fromYAML(`{name: broken, type: STATIC, connect_timeout: 0s}`, &clusterv3.Cluster{})
		m.set(snapshot("v3", []*clusterv3.Cluster{edsCluster(), bad}, b))
		Eventually(func() int64 { return statInt(s, "cluster_manager.cds.update_rejected") }, 10*time.Second, 50*time.Millisecond).Should(BeNumerically(">=", int64(2)), "rejected, and again at the next poll")
		Expect(statValue(s, "cluster_manager.cds.version_text")).To(Equal(`"v2"`))
		Expect(s.Get("/clusters").Body).NotTo(ContainSubstring("broken::"))
		reqs := m.received("clusters")
		Expect(reqs[len(reqs)-1].req.GetVersionInfo()).To(Equal("v2"))
		Expect(reqs[len(reqs)-1].req.GetErrorDetail()).To(BeNil(), "REST carries no error_detail, as in Envoy")
		Expect(get().Body).To(Equal("B"))
		Expect(s.Stderr()).To(ContainSubstring("connect_timeout"))

		// The management server goes away: the polls fail, counted, and
		// the last configuration keeps serving.
		m.stop()
		Eventually(func() int64 { return statInt(s, "cluster_manager.cds.update_failure") }, 10*time.Second, 50*time.Millisecond).Should(BeNumerically(">=", int64(1)))
		Eventually(func() int64 { return statInt(s, "listener_manager.lds.update_failure") }, 10*time.Second, 50*time.Millisecond).Should(BeNumerically(">=", int64(1)))
		Expect(get().Body).To(Equal("B"))
		Expect(s.Get("/ready").Status).To(Equal(200))
	})

	It("refuses REST on the ADS stream, a REST source without its refresh_delay, and one polling an unknown or EDS cluster, naming the fields", func() {
		r, _ := validate("rest.yaml", `
node: {id: x, cluster: e2e}
static_resources: {clusters: [`+xdsHTTP1ClusterYAML(1)+`]}
dynamic_resources:
  ads_config: {api_type: REST, transport_api_version: V3, cluster_names: [xds], refresh_delay: 1s}
  cds_config: {api_config_source: {api_type: REST, transport_api_version: V3, cluster_names: [xds]}, resource_api_version: V3}
`)
		Expect(r.ExitCode).NotTo(Equal(0))
		Expect(r.Stderr).To(ContainSubstring("dynamic_resources.ads_config.api_type: REST cannot carry the aggregated stream"))
		Expect(r.Stderr).To(ContainSubstring("dynamic_resources.cds_config.api_config_source.refresh_delay: required for REST API configuration sources"))

		for _, name := range []string{"nope", "backend"} {
			r, _ = validate("rest-cluster.yaml", `
node: {id: x, cluster: e2e}
static_resources:
  clusters:
  - `+xdsHTTP1ClusterYAML(1)+`
  - {name: backend, type: EDS, connect_timeout: 1s, eds_cluster_config: {eds_config: {api_config_source: `+restSource("")+`}}}
dynamic_resources:
  lds_config: {api_config_source: {api_type: REST, transport_api_version: V3, cluster_names: [`+name+`], refresh_delay: 1s}, resource_api_version: V3}
`)
			Expect(r.ExitCode).NotTo(Equal(0))
			Expect(r.Stderr).To(ContainSubstring("dynamic_resources.lds_config.api_config_source.cluster_names[0]: must have a statically defined non-EDS cluster: '" + name + "' does not exist, was added via api, or is an EDS cluster"))
		}
	})
})
