package e2e

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"
)

// cdsBootstrap is adsBootstrap with the clusters over ADS too
// (cds_config: {ads: {}}).
func cdsBootstrap(xdsPort int) string {
	GinkgoHelper()
	var b map[string]any
	Expect(json.Unmarshal([]byte(adsBootstrap(xdsPort, "")), &b)).To(Succeed())
	b["dynamic_resources"].(map[string]any)["cds_config"] = map[string]any{"ads": map[string]any{}, "resource_api_version": "V3"}
	out, err := json.Marshal(b)
	Expect(err).NotTo(HaveOccurred())
	return string(out)
}

// clusterProto is a STATIC cluster of one loopback endpoint, with extra
// cluster fields (a YAML flow mapping), as a Cluster.
func clusterProto(name string, port int, extra string) *clusterv3.Cluster {
	GinkgoHelper()
	js, err := json.Marshal(proxyCluster{Name: name, Port: port, Extra: extra}.object())
	Expect(err).NotTo(HaveOccurred())
	out := &clusterv3.Cluster{}
	Expect(protojson.Unmarshal(js, out)).To(Succeed())
	return out
}

// twoRouteListener is a listener whose connection manager routes /slow to
// the cluster slow and everything else to main.
func twoRouteListener(name, main, slow string) *listenerv3.Listener {
	GinkgoHelper()
	chain := `{filters: [{name: envoy.filters.network.http_connection_manager, typed_config: {` +
		`"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager, stat_prefix: cds, ` +
		`route_config: {virtual_hosts: [{name: all, domains: ["*"], routes: [` +
		`{match: {prefix: "/slow"}, route: {cluster: ` + slow + `}}, {match: {prefix: "/"}, route: {cluster: ` + main + `}}]}]}, ` +
		`http_filters: [{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]}}]}`
	return listenerProto(listenerDef{Name: name, Chains: []string{chain}})
}

var _ = Describe("CDS: clusters from a management server over ADS", func() {
	// cdsRequests are the cluster requests the server received.
	cdsRequests := func(m *managementServer) []*discoveryv3.DiscoveryRequest {
		var out []*discoveryv3.DiscoveryRequest
		for _, r := range m.received() {
			if r.GetTypeUrl() == resourcev3.ClusterType {
				out = append(out, r)
			}
		}
		return out
	}
	// lastNACK is the latest cluster request carrying an error, nil when
	// none does.
	lastNACK := func(m *managementServer) *discoveryv3.DiscoveryRequest {
		var nack *discoveryv3.DiscoveryRequest
		for _, r := range cdsRequests(m) {
			if r.GetErrorDetail() != nil {
				nack = r
			}
		}
		return nack
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(addr, path string) Response {
		return httpDo(client, http.MethodGet, "http://"+addr+path, nil, nil)
	}

	It("waits for the clusters before the listeners, then adds, updates and removes clusters at run time; a removed cluster finishes its request in flight; a bad cluster is NACKed", func() {
		a, b := startNamed("A"), startNamed("B")
		slowPort := startSlowStream(15, 100*time.Millisecond)
		m := startManagementServer()
		s := Launch(newDir(), "bootstrap.yaml", cdsBootstrap(m.port))
		s.WaitForAdmin()

		// No cluster response yet: not ready, and listeners are not asked
		// for before the clusters are in (Envoy's init order).
		Eventually(func() []*discoveryv3.DiscoveryRequest { return cdsRequests(m) }).ShouldNot(BeEmpty())
		Expect(cdsRequests(m)[0].GetResourceNames()).To(BeEmpty(), "a wildcard subscription")
		Consistently(func() int { return s.Get("/ready").Status }, "500ms").Should(Equal(503))
		for _, r := range m.received() {
			Expect(r.GetTypeUrl()).NotTo(Equal(resourcev3.ListenerType))
		}

		ingress := []*listenerv3.Listener{twoRouteListener("ingress", "svc", "slow")}
		m.set(xdsSnapshot("v1", ingress, []*clusterv3.Cluster{clusterProto("svc", a, ""), clusterProto("slow", slowPort, "")}))
		waitLive(s)
		addr := listenerAddr(s, "ingress")
		Expect(get(addr, "/").Body).To(Equal("A"))
		Expect(statValue(s, "cluster_manager.cds.version_text")).To(Equal(`"v1"`))
		Expect(statValue(s, "cluster_manager.cds.update_success")).To(Equal("1"))
		Expect(statValue(s, "cluster_manager.cluster_added")).To(Equal("3"), "xds, then svc and slow")
		Expect(statValue(s, "cluster_manager.active_clusters")).To(Equal("3"))
		Expect(statValue(s, "cluster_manager.warming_clusters")).To(Equal("0"))
		clusters := s.Get("/clusters").Body
		Expect(clusters).To(ContainSubstring("svc::added_via_api::true"))
		Expect(clusters).To(ContainSubstring("xds::added_via_api::false"))

		// /config_dump shows them as dynamic active clusters.
		var dump *adminv3.ClustersConfigDump
		for _, c := range configDump(s, "/config_dump").GetConfigs() {
			if c.GetTypeUrl() == adminTypes+"ClustersConfigDump" {
				dump = &adminv3.ClustersConfigDump{}
				Expect(c.UnmarshalTo(dump)).To(Succeed())
			}
		}
		Expect(dump).NotTo(BeNil())
		Expect(dump.GetVersionInfo()).To(Equal("v1"))
		Expect(dump.GetStaticClusters()).To(HaveLen(1))
		Expect(dump.GetDynamicActiveClusters()).To(HaveLen(2))
		for _, dc := range dump.GetDynamicActiveClusters() {
			Expect(dc.GetVersionInfo()).To(Equal("v1"))
			Expect(dc.GetLastUpdated().AsTime()).NotTo(BeZero())
		}

		// A changed cluster replaces the old one for new requests.
		m.set(xdsSnapshot("v2", ingress, []*clusterv3.Cluster{clusterProto("svc", b, ""), clusterProto("slow", slowPort, "")}))
		waitStat(s, "cluster_manager.cds.version_text", `"v2"`)
		Expect(get(addr, "/").Body).To(Equal("B"))
		Expect(statValue(s, "cluster_manager.cluster_modified")).To(Equal("1"))

		// A request in flight on a cluster that is then removed completes;
		// new requests to it find no cluster (503, NC).
		var (
			wg   sync.WaitGroup
			slow Response
		)
		wg.Go(func() {
			defer GinkgoRecover()
			slow = get(addr, "/slow")
		})
		Eventually(func() string { return statValue(s, "cluster.slow.upstream_rq_active") }).Should(Equal("1"))
		m.set(xdsSnapshot("v3", ingress, []*clusterv3.Cluster{clusterProto("svc", b, "")}))
		waitStat(s, "cluster_manager.cds.version_text", `"v3"`)
		Expect(statValue(s, "cluster_manager.cluster_removed")).To(Equal("1"))
		Expect(statValue(s, "cluster_manager.active_clusters")).To(Equal("2"))
		gone := get(addr, "/slow")
		Expect(gone.Status).To(Equal(503))
		wg.Wait()
		Expect(slow.Status).To(Equal(200))
		Expect(strings.Count(slow.Body, "piece")).To(Equal(15), "the whole body of the request in flight")
		Expect(s.Get("/clusters").Body).NotTo(ContainSubstring("slow::"))

		// A bad cluster rejects the whole response, with its path; the
		// clusters in service stay.
		bad := clusterProto("broken", a, `{connect_timeout: -1s}`)
		m.set(xdsSnapshot("v4", ingress, []*clusterv3.Cluster{clusterProto("svc", a, ""), bad}))
		Eventually(func() *discoveryv3.DiscoveryRequest { return lastNACK(m) }).ShouldNot(BeNil())
		nack := lastNACK(m)
		Expect(nack.GetVersionInfo()).To(Equal("v3"))
		// The cache orders the resources as it likes.
		Expect(nack.GetErrorDetail().GetMessage()).To(MatchRegexp(`^resources\[[01]\]\.connect_timeout: value must be greater than 0s$`))
		Eventually(func() (int, error) { return strconv.Atoi(statValue(s, "cluster_manager.cds.update_rejected")) }).Should(BeNumerically(">=", 1))
		Expect(statValue(s, "cluster_manager.cds.version_text")).To(Equal(`"v3"`))
		Expect(get(addr, "/").Body).To(Equal("B"), "the v3 clusters keep serving")
	})

	It("serves without a failed request while clusters change under a steady load and while the management server restarts", func() {
		a, b := startNamed("A"), startNamed("B")
		m := startManagementServer()
		ingress := []*listenerv3.Listener{twoRouteListener("ingress", "svc", "other")}
		snapshot := func(version string, port int) {
			m.set(xdsSnapshot(version, ingress, []*clusterv3.Cluster{clusterProto("svc", port, ""), clusterProto("other", port, "")}))
		}
		snapshot("v0", a)
		s := Start(newDir(), cdsBootstrap(m.port))
		waitLive(s)
		addr := listenerAddr(s, "ingress")

		// A bounded load: at most 4000 requests or 60 s, on keep-alive
		// connections (which a replaced cluster's pools drain).
		finish := steadyLoad(addr)
		for i := 1; i <= 20; i++ {
			port := a
			if i%2 == 1 {
				port = b
			}
			v := "u" + strconv.Itoa(i)
			snapshot(v, port)
			waitStat(s, "cluster_manager.cds.version_text", `"`+v+`"`)
			time.Sleep(50 * time.Millisecond)
		}
		// The management server goes away and comes back with the same
		// configuration: the proxy keeps serving meanwhile and catches up.
		m.restart(xdsSnapshot("u20", ingress, []*clusterv3.Cluster{clusterProto("svc", a, ""), clusterProto("other", a, "")}))
		Eventually(func() string { return statValue(s, "control_plane.connected_state") }).Should(Equal("1"))
		time.Sleep(300 * time.Millisecond)
		total, failures := finish()
		Expect(failures).To(BeEmpty())
		Expect(total).To(BeNumerically(">", 20))
		Expect(statValue(s, "cluster_manager.cluster_modified")).To(Equal("40"), "both clusters changed 20 times")
		Expect(statValue(s, "cluster_manager.cds.update_rejected")).To(Equal("0"))
	})

	It("serves through a listener, cluster and endpoints that all came over ADS: a discovered EDS cluster warms until its load assignment", func() {
		a, b := startNamed("A"), startNamed("B")
		m := startManagementServer()
		ingress := []*listenerv3.Listener{listenerProto(listenerDef{Name: "ingress", Chains: []string{routeToCluster("cds_eds", "svc")}})}
		edsSvc := func(extra string) *clusterv3.Cluster {
			js, err := json.Marshal(edsCluster("svc", "svc-endpoints", extra))
			Expect(err).NotTo(HaveOccurred())
			out := &clusterv3.Cluster{}
			Expect(protojson.Unmarshal(js, out)).To(Succeed())
			return out
		}
		// The cluster first, without its endpoints: it warms, the server
		// stays not ready and does not ask for listeners.
		m.set(xdsSnapshot("v1", ingress, []*clusterv3.Cluster{edsSvc("")}))
		s := Launch(newDir(), "bootstrap.yaml", cdsBootstrap(m.port))
		s.WaitForAdmin()
		Eventually(func() string { return statValue(s, "cluster_manager.warming_clusters") }).Should(Equal("1"))
		Consistently(func() int { return s.Get("/ready").Status }, "500ms").Should(Equal(503))
		for _, r := range m.received() {
			Expect(r.GetTypeUrl()).NotTo(Equal(resourcev3.ListenerType))
		}
		var eds *discoveryv3.DiscoveryRequest
		for _, r := range m.received() {
			if r.GetTypeUrl() == resourcev3.EndpointType {
				eds = r
			}
		}
		Expect(eds).NotTo(BeNil())
		Expect(eds.GetResourceNames()).To(Equal([]string{"svc-endpoints"}))
		var dump *adminv3.ClustersConfigDump
		for _, c := range configDump(s, "/config_dump").GetConfigs() {
			if c.GetTypeUrl() == adminTypes+"ClustersConfigDump" {
				dump = &adminv3.ClustersConfigDump{}
				Expect(c.UnmarshalTo(dump)).To(Succeed())
			}
		}
		Expect(dump.GetDynamicWarmingClusters()).To(HaveLen(1))
		Expect(dump.GetDynamicActiveClusters()).To(BeEmpty())

		// Its endpoints arrive: it is active, then the listeners come.
		m.set(xdsSnapshot("v2", ingress, []*clusterv3.Cluster{edsSvc("")}, loadAssignment("svc-endpoints", edsEndpoint{port: a})))
		waitLive(s)
		addr := listenerAddr(s, "ingress")
		Expect(get(addr, "/").Body).To(Equal("A"))
		Expect(statValue(s, "cluster_manager.warming_clusters")).To(Equal("0"))
		Expect(statValue(s, "cluster.svc.version_text")).To(Equal(`"v2"`))
		Expect(s.Get("/clusters").Body).To(ContainSubstring("svc::127.0.0.1:" + strconv.Itoa(a) + "::health_flags::healthy"))

		// A changed EDS cluster takes the last assignment of its service at
		// once (the management server does not send it again).
		m.set(xdsSnapshot("v3", ingress, []*clusterv3.Cluster{edsSvc(`{initial_fetch_timeout: 30s}`)}, loadAssignment("svc-endpoints", edsEndpoint{port: a})))
		waitStat(s, "cluster_manager.cluster_modified", "1")
		// Warm within moments, long before its 30 s initial fetch timeout.
		Eventually(func() string { return statValue(s, "cluster_manager.warming_clusters") }, "5s").Should(Equal("0"))
		Expect(statValue(s, "cluster.svc.init_fetch_timeout")).To(Equal("0"))
		Expect(get(addr, "/").Body).To(Equal("A"))

		// New endpoints reach the discovered cluster.
		m.set(xdsSnapshot("v4", ingress, []*clusterv3.Cluster{edsSvc(`{initial_fetch_timeout: 30s}`)}, loadAssignment("svc-endpoints", edsEndpoint{port: b})))
		waitStat(s, "cluster.svc.version_text", `"v4"`)
		Expect(get(addr, "/").Body).To(Equal("B"))

		// /config_dump?include_eds shows them as dynamic endpoint configs.
		var eps *adminv3.EndpointsConfigDump
		for _, c := range configDump(s, "/config_dump?include_eds").GetConfigs() {
			if c.GetTypeUrl() == adminTypes+"EndpointsConfigDump" {
				eps = &adminv3.EndpointsConfigDump{}
				Expect(c.UnmarshalTo(eps)).To(Succeed())
			}
		}
		Expect(eps).NotTo(BeNil())
		Expect(eps.GetDynamicEndpointConfigs()).To(HaveLen(1))
		dec := eps.GetDynamicEndpointConfigs()[0]
		Expect(dec.GetVersionInfo()).To(Equal("v4"))
		Expect(dec.GetLastUpdated().AsTime()).NotTo(BeZero())
		cla := &endpointv3.ClusterLoadAssignment{}
		Expect(dec.GetEndpointConfig().UnmarshalTo(cla)).To(Succeed())
		Expect(cla.GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress().GetPortValue()).To(BeEquivalentTo(b))
	})

	It("keeps a tcp_proxy session to a removed cluster until it ends; a new session finds no cluster", func() {
		up := startTCPServer(echo)
		m := startManagementServer()
		chain := `{filters: [{name: envoy.filters.network.tcp_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: cds_tcp, cluster: tcp-up}}]}`
		ls := []*listenerv3.Listener{listenerProto(listenerDef{Name: "tcp", Chains: []string{chain}})}
		m.set(xdsSnapshot("v1", ls, []*clusterv3.Cluster{clusterProto("tcp-up", up, "")}))
		s := Start(newDir(), cdsBootstrap(m.port))
		waitLive(s)
		_, portText, err := net.SplitHostPort(listenerAddr(s, "tcp"))
		Expect(err).NotTo(HaveOccurred())
		port, err := strconv.Atoi(portText)
		Expect(err).NotTo(HaveOccurred())

		c := dialTCP(port)
		roundTrip := func(msg string) string {
			_, err := c.Write([]byte(msg))
			Expect(err).NotTo(HaveOccurred())
			buf := make([]byte, len(msg))
			_, err = io.ReadFull(c, buf)
			Expect(err).NotTo(HaveOccurred())
			return string(buf)
		}
		Expect(roundTrip("before")).To(Equal("before"))

		m.set(xdsSnapshot("v2", ls, []*clusterv3.Cluster{}))
		waitStat(s, "cluster_manager.cluster_removed", "1")
		// Well past the drain's quiet second: the session holds the
		// cluster's connection, so the cluster stays open.
		time.Sleep(1500 * time.Millisecond)
		Expect(roundTrip("after")).To(Equal("after"))

		// A new session finds no cluster and is closed.
		c2 := dialTCP(port)
		_, err = c2.Read(make([]byte, 1))
		Expect(err).To(HaveOccurred())
		waitStat(s, "tcp.cds_tcp.downstream_cx_no_route", "1")
		Expect(c.CloseWrite()).To(Succeed())
		_, err = io.ReadAll(c)
		Expect(err).NotTo(HaveOccurred())
	})

	It("gives a discovered cluster its TLS transport socket: SNI, SAN checks, ssl stats and /certs, and a replaced cluster's new checks", func() {
		f := newTLSFiles(newDir())
		up := startTLSUpstream(f, false)
		m := startManagementServer()
		s := Launch(newDir(), "bootstrap.yaml", cdsBootstrap(m.port))
		s.WaitForAdmin()
		secure := func(san string) *clusterv3.Cluster {
			return clusterProto("secure", up, "{transport_socket: "+upstreamTLS(`, sni: a.example.com, common_tls_context: {validation_context: {trusted_ca: {filename: `+
				f.ca+`}, match_typed_subject_alt_names: [{san_type: DNS, matcher: {exact: `+san+`}}]}}`)+"}")
		}
		ingress := []*listenerv3.Listener{twoRouteListener("ingress", "secure", "secure")}
		m.set(xdsSnapshot("v1", ingress, []*clusterv3.Cluster{secure("a.example.com")}))
		waitLive(s)
		addr := listenerAddr(s, "ingress")
		r := get(addr, "/")
		Expect(r.Status).To(Equal(200), r.Body)
		Expect(r.Body).To(Equal("sni=a.example.com alpn=http/1.1 proto=HTTP/1.1 peer=-"))
		Expect(statValue(s, "cluster.secure.ssl.handshake")).To(Equal("1"))
		Expect(s.Get("/certs").Body).To(ContainSubstring(f.ca))

		// The replacement checks another name: the upstream now fails it.
		m.set(xdsSnapshot("v2", ingress, []*clusterv3.Cluster{secure("b.example.org")}))
		waitStat(s, "cluster_manager.cds.version_text", `"v2"`)
		r = get(addr, "/")
		Expect(r.Status).To(Equal(503))
		Expect(r.Body).To(ContainSubstring("CERTIFICATE_VERIFY_FAILED"))
		Eventually(func() string { return statValue(s, "cluster.secure.ssl.fail_verify_san") }).Should(Equal("1"))
	})
})
