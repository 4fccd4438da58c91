package e2e

import (
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	// The typed configs of the on_demand HTTP filter's listener.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/stream/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/on_demand/v3"
)

// onDemandChain is a filter chain (YAML flow) whose tcp_proxy, with stat
// prefix prefix, sends to cluster, discovered on demand within timeout.
func onDemandChain(prefix, cluster, timeout string) string {
	return `{filters: [{name: envoy.filters.network.tcp_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, ` +
		`stat_prefix: ` + prefix + `, cluster: ` + cluster + `, on_demand: {odcds_config: {ads: {}, resource_api_version: V3}, timeout: ` + timeout + `}}}]}`
}

// listenerPort is the port of the listener name.
func listenerPort(s *Sidecar, name string) int {
	GinkgoHelper()
	_, portText, err := net.SplitHostPort(listenerAddr(s, name))
	Expect(err).NotTo(HaveOccurred())
	port, err := strconv.Atoi(portText)
	Expect(err).NotTo(HaveOccurred())
	return port
}

var _ = Describe("On-demand CDS: tcp_proxy on_demand over the delta ADS stream", func() {
	It("asks for an unknown cluster when a connection needs it, proxies once it arrives, and closes after the timeout when it never does", func() {
		up := startTCPServer(echo)
		m := startManagementServer()
		ls := []*listenerv3.Listener{
			listenerProto(listenerDef{Name: "found", Chains: []string{onDemandChain("od_found", "od-svc", "10s")}}),
			listenerProto(listenerDef{Name: "missing", Chains: []string{onDemandChain("od_missing", "od-none", "0.3s")}}),
			listenerProto(listenerDef{Name: "second", Chains: []string{onDemandChain("od_second", "od-svc2", "10s")}}),
		}
		m.set(xdsSnapshot("v1", ls, []*clusterv3.Cluster{clusterProto("od-svc", up, ""), clusterProto("od-svc2", up, "")}))
		// Listeners over delta ADS, no cds_config: clusters come on demand only.
		s := Start(newDir(), toDelta(adsBootstrap(m.port, "")))
		waitLive(s)
		Expect(s.Get("/clusters").Body).NotTo(ContainSubstring("od-svc::"), "nothing asked for before a connection needs it")
		Expect(m.deltaOf(resourcev3.ClusterType)).To(BeEmpty())
		Expect(statValue(s, "tcp.od_found.on_demand_cluster_attempt")).To(Equal("0"))

		c := dialTCP(listenerPort(s, "found"))
		_, err := c.Write([]byte("hello"))
		Expect(err).NotTo(HaveOccurred())
		buf := make([]byte, 5)
		_, err = io.ReadFull(c, buf)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(buf)).To(Equal("hello"))
		Expect(c.CloseWrite()).To(Succeed())
		_, err = io.ReadAll(c)
		Expect(err).NotTo(HaveOccurred())
		Expect(statValue(s, "tcp.od_found.on_demand_cluster_attempt")).To(Equal("1"))
		Expect(statValue(s, "tcp.od_found.on_demand_cluster_success")).To(Equal("1"))
		Expect(statValue(s, "tcp.od_found.on_demand_cluster_timeout")).To(Equal("0"))
		Expect(s.Get("/clusters").Body).To(ContainSubstring("od-svc::added_via_api::true"))
		Expect(statValue(s, "cluster_manager.odcds.update_success")).To(Equal("1"))
		first := m.deltaOf(resourcev3.ClusterType)[0]
		Expect(first.GetResourceNamesSubscribe()).To(Equal([]string{"od-svc"}), "the cluster is asked for by name")

		// A second connection finds the cluster in service: no discovery.
		c2 := dialTCP(listenerPort(s, "found"))
		_, err = c2.Write([]byte("again"))
		Expect(err).NotTo(HaveOccurred())
		_, err = io.ReadFull(c2, buf)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(buf)).To(Equal("again"))
		Expect(c2.Close()).To(Succeed())
		Expect(statValue(s, "tcp.od_found.on_demand_cluster_attempt")).To(Equal("1"))

		// A cluster the management server does not have: asked for, then
		// the connection is closed after the timeout, with no route.
		c3 := dialTCP(listenerPort(s, "missing"))
		_, err = c3.Read(make([]byte, 1))
		Expect(err).To(HaveOccurred())
		Expect(statValue(s, "tcp.od_missing.on_demand_cluster_attempt")).To(Equal("1"))
		Expect(statValue(s, "tcp.od_missing.on_demand_cluster_timeout")).To(Equal("1"))
		Expect(statValue(s, "tcp.od_missing.on_demand_cluster_success")).To(Equal("0"))
		waitStat(s, "tcp.od_missing.downstream_cx_no_route", "1")
		Expect(m.deltaOf(resourcev3.ClusterType)).To(ContainElement(Satisfy(func(r *discoveryv3.DeltaDiscoveryRequest) bool {
			return len(r.GetResourceNamesSubscribe()) == 1 && r.GetResourceNamesSubscribe()[0] == "od-none"
		})), "the second name is added to the subscription")

		// A second on-demand cluster joins the first, which stays.
		c4 := dialTCP(listenerPort(s, "second"))
		_, err = c4.Write([]byte("twice"))
		Expect(err).NotTo(HaveOccurred())
		_, err = io.ReadFull(c4, buf)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(buf)).To(Equal("twice"))
		Expect(c4.Close()).To(Succeed())
		Expect(statValue(s, "tcp.od_second.on_demand_cluster_success")).To(Equal("1"))
		clusters := s.Get("/clusters").Body
		Expect(clusters).To(ContainSubstring("od-svc::added_via_api::true"))
		Expect(clusters).To(ContainSubstring("od-svc2::added_via_api::true"))
		Expect(statValue(s, "cluster_manager.cluster_removed")).To(Equal("0"))
	})

	It("refuses on_demand without a delta ADS stream, naming the field", func() {
		m := startManagementServer()
		ls := []*listenerv3.Listener{listenerProto(listenerDef{Name: "found", Chains: []string{onDemandChain("od_sotw", "od-svc", "1s")}})}
		m.set(xdsSnapshot("v1", ls, nil))
		s := Start(newDir(), adsBootstrap(m.port, ""))
		waitLive(s)
		Eventually(func() string { return dynamicListeners(s)["found"].GetErrorState().GetDetails() }).Should(ContainSubstring(
			"filter_chains[0].filters[0].typed_config.on_demand.odcds_config.ads: requires dynamic_resources.ads_config with api_type DELTA_GRPC"))
		Expect(listenerNames(s)).To(BeEmpty())
	})
})

// onDemandHTTPChain is a filter chain (YAML flow) whose connection
// manager runs the on_demand HTTP filter (on-demand CDS within timeout)
// before the router, routing /found to cluster found and /missing to
// cluster missing, whose route waits only 0.3 s (a PerRouteConfig).
func onDemandHTTPChain(found, missing, timeout string) string {
	od := `{source: {ads: {}, resource_api_version: V3}, timeout: ` + timeout + `}`
	return `{filters: [{name: envoy.filters.network.http_connection_manager, typed_config: {` +
		`"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager, stat_prefix: od_http, ` +
		`access_log: [` + stdoutLog("ODLOG %RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS%\n") + `], ` +
		`route_config: {validate_clusters: false, virtual_hosts: [{name: all, domains: ["*"], routes: [` +
		`{match: {prefix: "/found"}, route: {cluster: ` + found + `}}, ` +
		`{match: {prefix: "/missing"}, route: {cluster: ` + missing + `}, typed_per_filter_config: {envoy.filters.http.on_demand: {` +
		`"@type": type.googleapis.com/envoy.extensions.filters.http.on_demand.v3.PerRouteConfig, odcds: {source: {ads: {}}, timeout: 0.3s}}}}]}]}, ` +
		`http_filters: [{name: envoy.filters.http.on_demand, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.on_demand.v3.OnDemand, odcds: ` + od + `}}, ` +
		`{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]}}]}`
}

var _ = Describe("On-demand CDS: the on_demand HTTP filter over the delta ADS stream", func() {
	It("asks for a route's unknown cluster, forwards once it arrives, and lets the router answer 503 when it never does", func() {
		up := startNamed("late")
		m := startManagementServer()
		ls := []*listenerv3.Listener{listenerProto(listenerDef{Name: "web", Chains: []string{onDemandHTTPChain("od-late", "od-never", "10s")}})}
		m.set(xdsSnapshot("v1", ls, []*clusterv3.Cluster{clusterProto("od-late", up, "")}))
		s := Start(newDir(), toDelta(adsBootstrap(m.port, "")), "--file-flush-interval-msec", "50")
		waitLive(s)
		Expect(s.Get("/clusters").Body).NotTo(ContainSubstring("od-late::"), "nothing asked for before a request needs it")

		addr := listenerAddr(s, "web")
		client := &http.Client{Timeout: 10 * time.Second}
		r := httpDo(client, http.MethodGet, "http://"+addr+"/found", nil, nil)
		Expect(r.Status).To(Equal(200), r.Body)
		Expect(r.Body).To(Equal("late"))
		Expect(s.Get("/clusters").Body).To(ContainSubstring("od-late::added_via_api::true"))
		Expect(statValue(s, "cluster_manager.odcds.update_success")).NotTo(Equal("0"))
		first := m.deltaOf(resourcev3.ClusterType)[0]
		Expect(first.GetResourceNamesSubscribe()).To(Equal([]string{"od-late"}), "the route's cluster is asked for by name")

		// A cluster the management server does not have: the route's own
		// timeout passes, then the router finds no cluster.
		r = httpDo(client, http.MethodGet, "http://"+addr+"/missing", nil, nil)
		Expect(r.Status).To(Equal(503), r.Body)
		Eventually(s.Stdout).Should(ContainSubstring("ODLOG 503 NC cluster_not_found\n"))
		Expect(m.deltaOf(resourcev3.ClusterType)).To(ContainElement(Satisfy(func(req *discoveryv3.DeltaDiscoveryRequest) bool {
			return slices.Contains(req.GetResourceNamesSubscribe(), "od-never")
		})))
	})

	It("refuses odcds without a delta ADS stream, naming the field", func() {
		res := Run("--mode", "validate", "--config-yaml", `{static_resources: {listeners: [{name: l, address: {socket_address: {address: 127.0.0.1, port_value: 0}}, filter_chains: [`+
			onDemandHTTPChain("a", "b", "1s")+`]}]}}`)
		Expect(res.ExitCode).To(Equal(1))
		Expect(res.Stderr).To(ContainSubstring("http_filters[0].typed_config.odcds.source.ads: requires dynamic_resources.ads_config with api_type DELTA_GRPC"))
	})
})
