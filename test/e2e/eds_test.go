package e2e

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("EDS: a static cluster's endpoints from a management server over ADS", func() {
	// requestsOf are the requests of a type the server received.
	requestsOf := func(m *managementServer, typeURL string) []*discoveryv3.DiscoveryRequest {
		var out []*discoveryv3.DiscoveryRequest
		for _, r := range m.received() {
			if r.GetTypeUrl() == typeURL {
				out = append(out, r)
			}
		}
		return out
	}
	// bodies sends n requests to addr on new connections and counts the
	// answers by body.
	bodies := func(addr string, n int) map[string]int {
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		out := map[string]int{}
		for range n {
			out[httpDo(client, http.MethodGet, "http://"+addr+"/", nil, nil).Body]++
		}
		return out
	}

	It("warms the cluster until its endpoints arrive, then follows updates: new hosts, health, priorities; a bad assignment is NACKed and the hosts stay", func() {
		a, b := startNamed("A"), startNamed("B")
		m := startManagementServer()
		ingress := []*listenerv3.Listener{listenerProto(listenerDef{Name: "ingress", Chains: []string{routeToCluster("eds_ingress", "backend")}})}
		s := Launch(newDir(), "bootstrap.yaml", adsBootstrap(m.port, "", edsCluster("backend", "backend-svc", "")))
		s.WaitForAdmin()

		// The cluster warms: the server is not ready, and listeners are
		// not asked for before the clusters are warm (as Envoy's LDS
		// starts after its cluster manager's initialisation).
		Eventually(func() []*discoveryv3.DiscoveryRequest { return requestsOf(m, resourcev3.EndpointType) }).ShouldNot(BeEmpty())
		eds := requestsOf(m, resourcev3.EndpointType)[0]
		Expect(eds.GetResourceNames()).To(Equal([]string{"backend-svc"}))
		Expect(eds.GetNode().GetId()).To(Equal(adsNodeID))
		Consistently(func() int { return s.Get("/ready").Status }).Should(Equal(503))
		Expect(requestsOf(m, resourcev3.ListenerType)).To(BeEmpty())

		m.set(adsSnapshot("v1", ingress, loadAssignment("backend-svc", edsEndpoint{port: a})))
		waitLive(s)
		addr := listenerAddr(s, "ingress")
		Expect(bodies(addr, 4)).To(Equal(map[string]int{"A": 4}))
		Expect(statValue(s, "cluster.backend.update_success")).To(Equal("1"))
		Expect(statValue(s, "cluster.backend.version_text")).To(Equal(`"v1"`))
		Expect(statValue(s, "cluster.backend.membership_total")).To(Equal("1"))
		Expect(s.Get("/clusters").Body).To(ContainSubstring("backend::127.0.0.1:" + strconv.Itoa(a) + "::health_flags::healthy"))

		// A second host, and both get traffic.
		m.set(adsSnapshot("v2", ingress, loadAssignment("backend-svc", edsEndpoint{port: a}, edsEndpoint{port: b})))
		waitStat(s, "cluster.backend.version_text", `"v2"`)
		Expect(bodies(addr, 8)).To(Equal(map[string]int{"A": 4, "B": 4}), "round robin over both hosts")

		// load_balancing_weight: weighted round robin (Envoy's schedule
		// repeats A, A, A, B).
		m.set(adsSnapshot("v2w", ingress, loadAssignment("backend-svc", edsEndpoint{port: a, weight: 3}, edsEndpoint{port: b, weight: 1})))
		waitStat(s, "cluster.backend.version_text", `"v2w"`)
		Expect(bodies(addr, 8)).To(Equal(map[string]int{"A": 6, "B": 2}))

		// Only HEALTHY and UNKNOWN hosts get traffic.
		m.set(adsSnapshot("v3", ingress, loadAssignment("backend-svc",
			edsEndpoint{port: a, health: corev3.HealthStatus_UNHEALTHY}, edsEndpoint{port: b, health: corev3.HealthStatus_HEALTHY})))
		waitStat(s, "cluster.backend.version_text", `"v3"`)
		Expect(bodies(addr, 4)).To(Equal(map[string]int{"B": 4}))

		// Priorities: the lower level takes the traffic while its hosts
		// are healthy, the next one when they are not.
		m.set(adsSnapshot("v4", ingress, loadAssignment("backend-svc",
			edsEndpoint{port: a, priority: 1}, edsEndpoint{port: b, priority: 0})))
		waitStat(s, "cluster.backend.version_text", `"v4"`)
		Expect(bodies(addr, 4)).To(Equal(map[string]int{"B": 4}))
		m.set(adsSnapshot("v5", ingress, loadAssignment("backend-svc",
			edsEndpoint{port: a, priority: 1}, edsEndpoint{port: b, priority: 0, health: corev3.HealthStatus_UNHEALTHY})))
		waitStat(s, "cluster.backend.version_text", `"v5"`)
		Expect(bodies(addr, 4)).To(Equal(map[string]int{"A": 4}))

		// A bad assignment is NACKed with its path; the hosts stay.
		bad := loadAssignment("backend-svc", edsEndpoint{port: b, priority: 200})
		m.set(adsSnapshot("v6", ingress, bad))
		Eventually(func() []*discoveryv3.DiscoveryRequest { return requestsOf(m, resourcev3.EndpointType) }).Should(ContainElement(Satisfy(func(r *discoveryv3.DiscoveryRequest) bool {
			return r.GetErrorDetail() != nil
		})))
		var nack *discoveryv3.DiscoveryRequest
		for _, r := range requestsOf(m, resourcev3.EndpointType) {
			if r.GetErrorDetail() != nil {
				nack = r
			}
		}
		Expect(nack.GetVersionInfo()).To(Equal("v5"))
		Expect(nack.GetResourceNames()).To(Equal([]string{"backend-svc"}))
		Expect(nack.GetErrorDetail().GetMessage()).To(ContainSubstring("resources[0].endpoints[0].priority: value must be less than or equal to 128"))
		Expect(strconv.Atoi(statValue(s, "cluster.backend.update_rejected"))).To(BeNumerically(">=", 1))
		Expect(statValue(s, "cluster.backend.version_text")).To(Equal(`"v5"`))
		Expect(bodies(addr, 2)).To(Equal(map[string]int{"A": 2}))

		// A field Outrigger does not implement is refused with its path,
		// as in a static cluster's load_assignment, not applied without it.
		unsupported := loadAssignment("backend-svc", edsEndpoint{port: b})
		unsupported.Endpoints[0].LbEndpoints[0].GetEndpoint().ObservabilityName = "not-implemented"
		m.set(adsSnapshot("v7", ingress, unsupported))
		Eventually(func() []*discoveryv3.DiscoveryRequest { return requestsOf(m, resourcev3.EndpointType) }).Should(ContainElement(Satisfy(func(r *discoveryv3.DiscoveryRequest) bool {
			return strings.Contains(r.GetErrorDetail().GetMessage(), "resources[0].endpoints[0].lb_endpoints[0].endpoint.observability_name")
		})))
		Expect(statValue(s, "cluster.backend.version_text")).To(Equal(`"v5"`))
		Expect(bodies(addr, 2)).To(Equal(map[string]int{"A": 2}))

		// The endpoints show in /config_dump?include_eds as a static
		// cluster's, from the last accepted assignment.
		var dump *adminv3.EndpointsConfigDump
		for _, c := range configDump(s, "/config_dump?include_eds").GetConfigs() {
			if c.GetTypeUrl() == adminTypes+"EndpointsConfigDump" {
				dump = &adminv3.EndpointsConfigDump{}
				Expect(c.UnmarshalTo(dump)).To(Succeed())
			}
		}
		Expect(dump).NotTo(BeNil())
		var shown []string
		for _, sc := range dump.GetStaticEndpointConfigs() {
			cla := &endpointv3.ClusterLoadAssignment{}
			Expect(sc.GetEndpointConfig().UnmarshalTo(cla)).To(Succeed())
			if cla.GetClusterName() != "backend-svc" {
				continue
			}
			for _, l := range cla.GetEndpoints() {
				for _, e := range l.GetLbEndpoints() {
					shown = append(shown, strconv.Itoa(int(e.GetEndpoint().GetAddress().GetSocketAddress().GetPortValue()))+"/"+e.GetHealthStatus().String())
				}
			}
		}
		// Envoy shows coarse health: an UNKNOWN host is HEALTHY.
		Expect(strings.Join(shown, ",")).To(Equal(strconv.Itoa(b) + "/UNHEALTHY," + strconv.Itoa(a) + "/HEALTHY"))
	})

	It("starts the cluster without endpoints once its initial_fetch_timeout passes", func() {
		m := startManagementServer() // no snapshot: nothing is ever answered
		s := Launch(newDir(), "bootstrap.yaml", adsBootstrap(m.port, "{initial_fetch_timeout: 1s}", edsCluster("backend", "backend-svc", "{initial_fetch_timeout: 1s}")))
		s.WaitForAdmin()
		Expect(s.Get("/ready").Status).To(Equal(503))
		Eventually(func() int { return s.Get("/ready").Status }, 15*time.Second).Should(Equal(200))
		Expect(statValue(s, "cluster.backend.init_fetch_timeout")).To(Equal("1"))
		Expect(statValue(s, "listener_manager.lds.init_fetch_timeout")).To(Equal("1"))
		Expect(statValue(s, "cluster.backend.membership_total")).To(Equal("0"))
	})

	It("counts a lost stream in the EDS cluster's update_failure and keeps its hosts", func() {
		a := startNamed("A")
		m := startManagementServer()
		m.set(adsSnapshot("v1", []*listenerv3.Listener{listenerProto(listenerDef{Name: "ingress", Chains: []string{routeToCluster("eds_ingress", "backend")}})},
			loadAssignment("backend-svc", edsEndpoint{port: a})))
		s := Start(newDir(), adsBootstrap(m.port, "", edsCluster("backend", "backend-svc", "")))
		waitLive(s)
		Expect(statValue(s, "cluster.backend.update_failure")).To(Equal("0"))
		m.stop()
		Eventually(func() string { return statValue(s, "cluster.backend.update_failure") }).ShouldNot(Equal("0"))
		Expect(bodies(listenerAddr(s, "ingress"), 3)).To(Equal(map[string]int{"A": 3}), "the last hosts keep serving")
	})
})
