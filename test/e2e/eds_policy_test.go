package e2e

import (
	"net"
	"strconv"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The load assignment's policy: each discovered assignment sets the
// cluster's overprovisioning factor and weighted priority health. The
// layouts make every split all or nothing, so that the counts are exact.
var _ = Describe("EDS: a load assignment's policy", func() {
	// withPolicy is cla with policy.
	withPolicy := func(cla *endpointv3.ClusterLoadAssignment, p *endpointv3.ClusterLoadAssignment_Policy) *endpointv3.ClusterLoadAssignment {
		cla.Policy = p
		return cla
	}
	// served sends n requests to the listener at addr and counts the
	// answers by body.
	served := func(addr string, n int) map[string]int {
		GinkgoHelper()
		_, port, err := net.SplitHostPort(addr)
		Expect(err).NotTo(HaveOccurred())
		p, err := strconv.Atoi(port)
		Expect(err).NotTo(HaveOccurred())
		return servedBy(p, n, "/")
	}

	It("follows each assignment's overprovisioning_factor, back to 140 without one, and weighted_priority_health, static clusters too", func() {
		a1, a2, a3, x, b := startNamed("A"), startNamed("A"), startNamed("A"), startNamed("X"), startNamed("B")
		m := startManagementServer()
		ls := []*listenerv3.Listener{
			listenerProto(listenerDef{Name: "ingress", Chains: []string{routeToCluster("eds_ingress", "backend")}}),
			listenerProto(listenerDef{Name: "static", Chains: []string{routeToCluster("static_ingress", "weighted")}}),
		}
		// A static cluster: P0 a host of weight 1 and an unhealthy one of
		// weight 100, P1 one host; by weight P0 has 100 * 1/101 = 0
		// health, so P1 takes everything (by count P0 would have 50).
		static := map[string]any{
			"name": "weighted", "connect_timeout": "1s",
			"load_assignment": flowYAML(`{cluster_name: weighted, policy: {overprovisioning_factor: 100, weighted_priority_health: true}, endpoints: [` +
				`{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: ` + strconv.Itoa(a1) + `}}}}, ` +
				`{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: ` + strconv.Itoa(x) + `}}}, load_balancing_weight: 100, health_status: UNHEALTHY}]}, ` +
				`{priority: 1, lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: ` + strconv.Itoa(b) + `}}}}]}]}`),
		}
		// P0: three healthy hosts and an unhealthy one; P1: one host.
		counted := func() *endpointv3.ClusterLoadAssignment {
			return loadAssignment("backend-svc", edsEndpoint{port: a1}, edsEndpoint{port: a2}, edsEndpoint{port: a3},
				edsEndpoint{port: x, health: corev3.HealthStatus_UNHEALTHY}, edsEndpoint{port: b, priority: 1})
		}
		m.set(adsSnapshot("v1", ls, counted()))
		s := Start(newDir(), adsBootstrap(m.port, "", edsCluster("backend", "backend-svc", ""), static))
		waitLive(s)
		addr := listenerAddr(s, "ingress")

		Expect(served(listenerAddr(s, "static"), 6)).To(Equal(map[string]int{"B": 6}), "a static cluster's weighted_priority_health")

		// Default factor 140: P0's health 140 * 3/4 = 105, capped at 100.
		Expect(served(addr, 6)).To(Equal(map[string]int{"A": 6}))

		// Factor 1: P0's health 1 * 3/4 = 0, P1's 1: P1 takes it all.
		m.set(adsSnapshot("v2", ls, withPolicy(counted(), &endpointv3.ClusterLoadAssignment_Policy{OverprovisioningFactor: wrapperspb.UInt32(1)})))
		waitStat(s, "cluster.backend.version_text", `"v2"`)
		Expect(served(addr, 6)).To(Equal(map[string]int{"B": 6}))

		// An assignment without a factor is back to 140.
		m.set(adsSnapshot("v3", ls, counted()))
		waitStat(s, "cluster.backend.version_text", `"v3"`)
		Expect(served(addr, 6)).To(Equal(map[string]int{"A": 6}))

		// P0: a host of weight 1 and an unhealthy one of weight 100, with
		// factor 100. By count P0's health is 100 * 1/2 = 50: both
		// levels take requests (each of 40 misses one with odds 2^-40);
		// by weight it is 100 * 1/101 = 0, and P1 takes them all.
		weighted := func(byWeight bool) *endpointv3.ClusterLoadAssignment {
			return withPolicy(loadAssignment("backend-svc", edsEndpoint{port: a1}, edsEndpoint{port: x, weight: 100, health: corev3.HealthStatus_UNHEALTHY},
				edsEndpoint{port: b, priority: 1}), &endpointv3.ClusterLoadAssignment_Policy{OverprovisioningFactor: wrapperspb.UInt32(100), WeightedPriorityHealth: byWeight})
		}
		m.set(adsSnapshot("v4", ls, weighted(false)))
		waitStat(s, "cluster.backend.version_text", `"v4"`)
		got := served(addr, 40)
		Expect(got).To(HaveLen(2), "%v", got)
		Expect(got).To(And(HaveKey("A"), HaveKey("B")), "%v", got)
		m.set(adsSnapshot("v5", ls, weighted(true)))
		waitStat(s, "cluster.backend.version_text", `"v5"`)
		Expect(served(addr, 6)).To(Equal(map[string]int{"B": 6}))
		Expect(statValue(s, "cluster.backend.update_rejected")).To(Equal("0"))
	})

	It("drops the endpoints when no assignment follows within endpoint_stale_after, re-armed by every assignment", func() {
		a := startNamed("A")
		m := startManagementServer()
		ls := []*listenerv3.Listener{listenerProto(listenerDef{Name: "ingress", Chains: []string{routeToCluster("eds_ingress", "backend")}})}
		staleAfter := func(d time.Duration) *endpointv3.ClusterLoadAssignment {
			return withPolicy(loadAssignment("backend-svc", edsEndpoint{port: a}), &endpointv3.ClusterLoadAssignment_Policy{EndpointStaleAfter: durationpb.New(d)})
		}
		m.set(adsSnapshot("v1", ls, staleAfter(time.Second)))
		s := Start(newDir(), adsBootstrap(m.port, "", edsCluster("backend", "backend-svc", "")))
		waitLive(s)
		addr := listenerAddr(s, "ingress")
		Expect(statValue(s, "cluster.backend.assignment_timeout_received")).To(Equal("1"))

		// Nothing follows: the hosts go, and requests find none.
		Eventually(func() string { return statValue(s, "cluster.backend.assignment_stale") }, 15*time.Second).Should(Equal("1"))
		Expect(statValue(s, "cluster.backend.membership_total")).To(Equal("0"))
		Expect(served(addr, 2)).To(Equal(map[string]int{"503": 2}))
		Expect(s.Get("/clusters").Body).NotTo(ContainSubstring("backend::127.0.0.1:" + strconv.Itoa(a)))

		// A new assignment brings them back and arms a new deadline; the
		// one after it, without the field, disarms it (its deadline of 4
		// s passes while the hosts stay).
		m.set(adsSnapshot("v2", ls, staleAfter(4*time.Second)))
		waitStat(s, "cluster.backend.version_text", `"v2"`)
		Expect(served(addr, 2)).To(Equal(map[string]int{"A": 2}))
		Expect(statValue(s, "cluster.backend.assignment_timeout_received")).To(Equal("2"))
		m.set(adsSnapshot("v3", ls, loadAssignment("backend-svc", edsEndpoint{port: a})))
		waitStat(s, "cluster.backend.version_text", `"v3"`)
		Consistently(func() string { return statValue(s, "cluster.backend.assignment_stale") }, 5*time.Second, 250*time.Millisecond).Should(Equal("1"))
		Expect(statValue(s, "cluster.backend.assignment_timeout_received")).To(Equal("2"))
		Expect(served(addr, 2)).To(Equal(map[string]int{"A": 2}))
	})
})
