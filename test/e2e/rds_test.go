package e2e

import (
	"net/http"
	"strconv"
	"time"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/wrapperspb"
	"sigs.k8s.io/yaml"
)

// rdsChain is a filter chain (YAML flow) whose connection manager, with
// stat prefix prefix, takes its routes from RDS over ADS under name.
func rdsChain(prefix, name string) string {
	return `{filters: [{name: envoy.filters.network.http_connection_manager, typed_config: {` +
		`"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager, stat_prefix: ` + prefix + `, ` +
		`rds: {route_config_name: ` + name + `, config_source: {ads: {}, resource_api_version: V3}}, ` +
		`http_filters: [{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]}}]}`
}

// routeConfigProto is a route configuration named name (YAML flow of its
// virtual_hosts list).
func routeConfigProto(name, virtualHosts string) *routev3.RouteConfiguration {
	GinkgoHelper()
	js, err := yaml.YAMLToJSON([]byte(`{name: ` + name + `, virtual_hosts: ` + virtualHosts + `}`))
	Expect(err).NotTo(HaveOccurred())
	out := &routev3.RouteConfiguration{}
	Expect(protojson.Unmarshal(js, out)).To(Succeed())
	return out
}

// allTo is a virtual_hosts list sending every request to cluster.
func allTo(cluster string) string {
	return `[{name: all, domains: ["*"], routes: [{match: {prefix: "/"}, route: {cluster: ` + cluster + `}}]}]`
}

var _ = Describe("RDS: route configurations from a management server over ADS", func() {
	It("warms the listener until its routes arrive, swaps routes for new requests, NACKs a bad configuration and keeps the old one, without a failed request under load", func() {
		a, b := startNamed("A"), startNamed("B")
		m := startManagementServer()
		ls := []*listenerv3.Listener{listenerProto(listenerDef{Name: "ingress", Chains: []string{rdsChain("ingress_rds", "routes")}})}
		cs := []*clusterv3.Cluster{clusterProto("svc-a", a, ""), clusterProto("svc-b", b, "")}
		m.set(routesSnapshot("v1", ls, cs, nil))
		s := Launch(newDir(), "bootstrap.yaml", cdsBootstrap(m.port))
		s.WaitForAdmin()

		// Clusters and the listener are in; the listener warms until its
		// route configuration arrives: not ready, and /init_dump says why.
		Eventually(func() string { return s.Get("/init_dump").Body }).Should(ContainSubstring("RdsRouteConfigSubscription init routes"))
		Expect(s.Get("/init_dump").Body).To(ContainSubstring("Listener-local-init-manager ingress"))
		Consistently(func() int { return s.Get("/ready").Status }, "500ms").Should(Equal(503))
		var rds *discoveryv3.DiscoveryRequest
		for _, r := range m.received() {
			if r.GetTypeUrl() == resourcev3.RouteType {
				rds = r
			}
		}
		Expect(rds).NotTo(BeNil())
		Expect(rds.GetResourceNames()).To(Equal([]string{"routes"}))

		m.set(routesSnapshot("v2", ls, cs, []*routev3.RouteConfiguration{routeConfigProto("routes", allTo("svc-a"))}))
		waitLive(s)
		Expect(s.Get("/init_dump").Body).NotTo(ContainSubstring("RdsRouteConfigSubscription"))
		addr := listenerAddr(s, "ingress")
		client := &http.Client{Timeout: 10 * time.Second}
		get := func() Response { return httpDo(client, http.MethodGet, "http://"+addr+"/", nil, nil) }
		Expect(get().Body).To(Equal("A"))
		Expect(statValue(s, "http.ingress_rds.rds.routes.version_text")).To(Equal(`"v2"`))
		Expect(statValue(s, "http.ingress_rds.rds.routes.config_reload")).To(Equal("1"))
		Expect(statValue(s, "http.ingress_rds.rds.routes.update_success")).To(Equal("1"))

		var dump *adminv3.RoutesConfigDump
		for _, c := range configDump(s, "/config_dump").GetConfigs() {
			if c.GetTypeUrl() == adminTypes+"RoutesConfigDump" {
				dump = &adminv3.RoutesConfigDump{}
				Expect(c.UnmarshalTo(dump)).To(Succeed())
			}
		}
		Expect(dump.GetDynamicRouteConfigs()).To(HaveLen(1))
		Expect(dump.GetDynamicRouteConfigs()[0].GetVersionInfo()).To(Equal("v2"))
		Expect(dump.GetDynamicRouteConfigs()[0].GetLastUpdated().AsTime()).NotTo(BeZero())

		// A changed route configuration applies to new requests.
		m.set(routesSnapshot("v3", ls, cs, []*routev3.RouteConfiguration{routeConfigProto("routes", allTo("svc-b"))}))
		waitStat(s, "http.ingress_rds.rds.routes.version_text", `"v3"`)
		Expect(get().Body).To(Equal("B"))

		// A configuration that does not build is NACKed with its path; the
		// old routes keep serving.
		bad := routeConfigProto("routes", `[{name: all, domains: ["*"], routes: [{match: {safe_regex: {regex: "("}}, route: {cluster: svc-a}}]}]`)
		m.set(routesSnapshot("v4", ls, cs, []*routev3.RouteConfiguration{bad}))
		Eventually(func() (int, error) { return strconv.Atoi(statValue(s, "http.ingress_rds.rds.routes.update_rejected")) }).Should(BeNumerically(">=", 1))
		// The NACK reaches the management server after the stat counts it.
		lastNACK := func() *discoveryv3.DiscoveryRequest {
			var nack *discoveryv3.DiscoveryRequest
			for _, r := range m.received() {
				if r.GetTypeUrl() == resourcev3.RouteType && r.GetErrorDetail() != nil {
					nack = r
				}
			}
			return nack
		}
		Eventually(lastNACK).ShouldNot(BeNil())
		nack := lastNACK()
		Expect(nack.GetVersionInfo()).To(Equal("v3"))
		Expect(nack.GetErrorDetail().GetMessage()).To(ContainSubstring("resources[0].virtual_hosts[0].routes[0].match.safe_regex"))
		Expect(statValue(s, "http.ingress_rds.rds.routes.version_text")).To(Equal(`"v3"`))
		Expect(get().Body).To(Equal("B"))

		// validate_clusters is off by default for RDS: a route to a
		// cluster not there answers 503; turned on, it rejects the
		// configuration.
		m.set(routesSnapshot("v5", ls, cs, []*routev3.RouteConfiguration{routeConfigProto("routes", allTo("nowhere"))}))
		waitStat(s, "http.ingress_rds.rds.routes.version_text", `"v5"`)
		Expect(get().Status).To(Equal(503))
		strict := routeConfigProto("routes", allTo("svc-a"))
		strict.ValidateClusters = wrapperspb.Bool(true)
		strict.VirtualHosts[0].Routes[0].GetRoute().ClusterSpecifier = &routev3.RouteAction_Cluster{Cluster: "nowhere"}
		m.set(routesSnapshot("v6", ls, cs, []*routev3.RouteConfiguration{strict}))
		Eventually(func() string {
			if n := lastNACK(); n != nil {
				return n.GetErrorDetail().GetMessage()
			}
			return ""
		}).Should(ContainSubstring("resources[0].virtual_hosts[0].routes[0].route.cluster: unknown cluster 'nowhere'"))
		m.set(routesSnapshot("v7", ls, cs, []*routev3.RouteConfiguration{routeConfigProto("routes", allTo("svc-b"))}))
		waitStat(s, "http.ingress_rds.rds.routes.version_text", `"v7"`)
		Expect(get().Body).To(Equal("B"))

		// Twenty route changes under a bounded load: no request fails.
		finish := steadyLoad(addr)
		for i := 1; i <= 20; i++ {
			target := "svc-a"
			if i%2 == 0 {
				target = "svc-b"
			}
			v := "r" + strconv.Itoa(i)
			m.set(routesSnapshot(v, ls, cs, []*routev3.RouteConfiguration{routeConfigProto("routes", allTo(target))}))
			waitStat(s, "http.ingress_rds.rds.routes.version_text", `"`+v+`"`)
			time.Sleep(50 * time.Millisecond)
		}
		// The management server restarts with the same configuration: the
		// proxy keeps serving and reconnects.
		m.restart(routesSnapshot("r20", ls, cs, []*routev3.RouteConfiguration{routeConfigProto("routes", allTo("svc-b"))}))
		Eventually(func() string { return statValue(s, "control_plane.connected_state") }).Should(Equal("1"))
		time.Sleep(300 * time.Millisecond)
		total, failures := finish()
		Expect(failures).To(BeEmpty())
		Expect(total).To(BeNumerically(">", 20))
		Expect(get().Body).To(Equal("B"))
	})
})
