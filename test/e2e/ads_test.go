package e2e

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protowire"
)

var _ = Describe("ADS: listeners from a management server over gRPC", func() {
	// adsListener is a listener on a kernel-chosen port answering body.
	adsListener := func(name, body string) listenerDef {
		return listenerDef{Name: name, Chains: []string{directChain(body, "")}}
	}
	// ldsRequests are the listener requests the server received.
	ldsRequests := func(m *managementServer) []*discoveryv3.DiscoveryRequest {
		var out []*discoveryv3.DiscoveryRequest
		for _, r := range m.received() {
			if r.GetTypeUrl() == resourcev3.ListenerType {
				out = append(out, r)
			}
		}
		return out
	}
	// lastLDSRequest is the latest listener request the server received.
	lastLDSRequest := func(m *managementServer) func() *discoveryv3.DiscoveryRequest {
		return func() *discoveryv3.DiscoveryRequest {
			rs := ldsRequests(m)
			if len(rs) == 0 {
				return nil
			}
			return rs[len(rs)-1]
		}
	}

	It("serves the listeners it sends, ACKs each version, adds, updates and removes listeners, and NACKs a bad one keeping the last good configuration", func() {
		m := startManagementServer()
		m.set(ldsSnapshot("v1", listenerProto(adsListener("one", "first")), listenerProto(adsListener("two", "second"))))
		s := Start(newDir(), adsBootstrap(m.port, ""))
		waitLive(s)

		Expect(getBody(listenerAddr(s, "one"))).To(Equal("first"))
		Expect(getBody(listenerAddr(s, "two"))).To(Equal("second"))
		Expect(statValue(s, "control_plane.connected_state")).To(Equal("1"))
		Expect(statValue(s, "control_plane.identifier")).To(Equal(`"` + adsControlPlaneID + `"`))
		Expect(statValue(s, "control_plane.pending_requests")).To(Equal("0"))
		Expect(statValue(s, "control_plane.rate_limit_enforced")).To(Equal("0"))
		Expect(statValue(s, "listener_manager.lds.version_text")).To(Equal(`"v1"`))
		Expect(statValue(s, "listener_manager.lds.update_success")).To(Equal("1"))
		// The stream went through the static cluster.
		Expect(statValue(s, "cluster.xds.upstream_cx_total")).To(Equal("1"))

		// The first request names the node, the later ones do not
		// (set_node_on_first_message_only); the response is ACKed.
		Eventually(lastLDSRequest(m)).Should(Satisfy(func(r *discoveryv3.DiscoveryRequest) bool {
			return r != nil && r.GetVersionInfo() == "v1" && r.GetResponseNonce() != "" && r.GetErrorDetail() == nil
		}), "the ACK of v1")
		reqs := ldsRequests(m)
		Expect(reqs[0].GetNode().GetId()).To(Equal(adsNodeID))
		Expect(reqs[0].GetNode().GetCluster()).To(Equal("e2e"))
		Expect(reqs[0].GetNode().GetUserAgentName()).To(Equal("outrigger"))
		Expect(reqs[0].GetNode().GetUserAgentBuildVersion()).NotTo(BeNil())
		Expect(reqs[0].GetVersionInfo()).To(BeEmpty())
		Expect(reqs[0].GetResourceNames()).To(BeEmpty(), "a wildcard subscription")
		for _, r := range reqs[1:] {
			Expect(r.GetNode()).To(BeNil(), "only the first message names the node")
		}

		// An update: "one" changes, "two" goes (it drains), "three" comes.
		addrOne := listenerAddr(s, "one")
		m.set(ldsSnapshot("v2", listenerProto(adsListener("one", "first, changed")), listenerProto(adsListener("three", "third"))))
		waitStat(s, "listener_manager.lds.version_text", `"v2"`)
		Expect(getBody(addrOne)).To(Equal("first, changed"), "the port is kept across the update")
		Expect(getBody(listenerAddr(s, "three"))).To(Equal("third"))
		Expect(listenerNames(s)).To(ConsistOf("one", "three"))
		Expect(statValue(s, "listener_manager.listener_removed")).To(Equal("1"))
		Expect(statValue(s, "listener_manager.listener_modified")).To(Equal("1"))
		dl := dynamicListeners(s)
		Expect(dl["one"].GetActiveState().GetVersionInfo()).To(Equal("v2"))
		Expect(dl["two"].GetDrainingState().GetVersionInfo()).To(Equal("v1"), "the removed listener drains")
		Expect(listenersDump(s).GetVersionInfo()).To(Equal("v2"))

		// A NACK: an invalid listener is refused with its field path, the
		// previous version is echoed, and the old listeners keep serving.
		bad := listenerProto(adsListener("one", "never"))
		bad.Address = nil
		m.set(ldsSnapshot("v3", bad, listenerProto(adsListener("three", "third"))))
		Eventually(lastLDSRequest(m)).Should(Satisfy(func(r *discoveryv3.DiscoveryRequest) bool {
			return r != nil && r.GetErrorDetail() != nil
		}), "a NACK")
		nack := lastLDSRequest(m)()
		Expect(nack.GetVersionInfo()).To(Equal("v2"), "a NACK echoes the last accepted version")
		Expect(nack.GetResponseNonce()).NotTo(BeEmpty())
		Expect(nack.GetErrorDetail().GetCode()).To(BeEquivalentTo(13), "INTERNAL, as Envoy")
		Expect(nack.GetErrorDetail().GetMessage()).To(ContainSubstring("one: "))
		Expect(nack.GetErrorDetail().GetMessage()).To(ContainSubstring("address"))
		// go-control-plane's cache answers a NACK with the same version
		// again (Envoy's rate_limit_settings would space them out).
		Expect(strconv.Atoi(statValue(s, "listener_manager.lds.update_rejected"))).To(BeNumerically(">=", 1))
		Eventually(func() int { return strings.Count(s.Stderr(), "ads: update rejected") }).Should(Equal(1), "the same rejection is logged once")
		Consistently(func() int { return strings.Count(s.Stderr(), "ads: update rejected") }).Should(Equal(1))
		Expect(statValue(s, "listener_manager.lds.version_text")).To(Equal(`"v2"`))
		Expect(getBody(addrOne)).To(Equal("first, changed"))
		Expect(dynamicListeners(s)["one"].GetErrorState().GetDetails()).To(ContainSubstring("address"))

		// A good version after the NACK is applied.
		m.set(ldsSnapshot("v4", listenerProto(adsListener("one", "fourth"))))
		waitStat(s, "listener_manager.lds.version_text", `"v4"`)
		Expect(getBody(addrOne)).To(Equal("fourth"))
		Expect(listenerNames(s)).To(ConsistOf("one"))

		// An empty set removes every listener, and is counted.
		m.set(ldsSnapshot("v5"))
		waitStat(s, "listener_manager.lds.version_text", `"v5"`)
		Expect(listenerNames(s)).To(BeEmpty())
		Expect(statValue(s, "listener_manager.lds.update_empty")).To(Equal("1"))
	})

	It("proxies to a static cluster through a listener and route that arrived over ADS", func() {
		up := startUpstream(false)
		m := startManagementServer()
		m.set(ldsSnapshot("v1", listenerProto(listenerDef{Name: "ingress", Chains: []string{routeToCluster("ads_ingress", "backend")}})))
		s := Start(newDir(), adsBootstrap(m.port, "", proxyCluster{Name: "backend", Port: up.port}.object()))
		waitLive(s)
		Expect(getBody(listenerAddr(s, "ingress"))).To(Equal("ok"))
		// The stream's counters are charged when it completes, which can be
		// just after the client has read the body.
		Eventually(func() string { return statValue(s, "cluster.backend.upstream_rq_200") }).Should(Equal("1"))
		Eventually(func() string { return statValue(s, "http.ads_ingress.downstream_rq_2xx") }).Should(Equal("1"))
	})

	It("keeps serving while the management server restarts, then reconnects and catches up", func() {
		m := startManagementServer()
		m.set(ldsSnapshot("v1", listenerProto(adsListener("one", "before"))))
		s := Start(newDir(), adsBootstrap(m.port, ""))
		waitLive(s)
		addr := listenerAddr(s, "one")
		Expect(getBody(addr)).To(Equal("before"))

		m.stop()
		Eventually(func() string { return statValue(s, "control_plane.connected_state") }).Should(Equal("0"))
		Eventually(func() string { return statValue(s, "listener_manager.lds.update_failure") }).ShouldNot(Equal("0"), "the lost stream is a connection failure")
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		for range 20 {
			Expect(httpDo(client, http.MethodGet, "http://"+addr+"/", nil, nil).Body).To(Equal("before"), "the last good configuration serves")
		}

		m.restart(ldsSnapshot("v2", listenerProto(adsListener("one", "after"))))
		Eventually(func() string { return statValue(s, "listener_manager.lds.version_text") }, 40*time.Second).Should(Equal(`"v2"`))
		Expect(statValue(s, "control_plane.connected_state")).To(Equal("1"))
		Expect(getBody(addr)).To(Equal("after"))
		// The new stream told the restarted server what this proxy had.
		Expect(ldsRequests(m)).To(ContainElement(Satisfy(func(r *discoveryv3.DiscoveryRequest) bool {
			return r.GetNode().GetId() == adsNodeID && r.GetVersionInfo() == "v1" && r.GetResponseNonce() == ""
		})))
	})

	It("stays initializing, /ready 503, until the first listener response", func() {
		m := startManagementServer() // no snapshot yet: the request waits
		s := Launch(newDir(), "bootstrap.yaml", adsBootstrap(m.port, ""))
		s.WaitForAdmin()
		Eventually(func() int { return len(ldsRequests(m)) }).Should(BeNumerically(">", 0))
		Consistently(func() int { return s.Get("/ready").Status }).Should(Equal(503))
		Expect(s.Get("/server_info").Body).To(ContainSubstring(`"state": "INITIALIZING"`))

		m.set(ldsSnapshot("v1", listenerProto(adsListener("one", "ready"))))
		waitLive(s)
		Expect(getBody(listenerAddr(s, "one"))).To(Equal("ready"))
		Expect(statValue(s, "listener_manager.lds.init_fetch_timeout")).To(Equal("0"))
	})

	It("names the node as the command line completes it", func() {
		m := startManagementServer()
		s := Launch(newDir(), "bootstrap.yaml", adsBootstrap(m.port, ""),
			"--service-node", "cli-node", "--service-cluster", "cli-cluster", "--service-zone", "zone-a")
		s.WaitForAdmin()
		Eventually(func() []*discoveryv3.DiscoveryRequest { return ldsRequests(m) }).ShouldNot(BeEmpty())
		node := ldsRequests(m)[0].GetNode()
		Expect(node.GetId()).To(Equal("cli-node"))
		Expect(node.GetCluster()).To(Equal("cli-cluster"))
		Expect(node.GetLocality().GetZone()).To(Equal("zone-a"))
		Expect(node.GetUserAgentName()).To(Equal("outrigger"))
		Expect(node.GetUserAgentBuildVersion().GetVersion()).NotTo(BeNil())
		Expect(node.GetExtensions()).NotTo(BeEmpty(), "the extensions linked in, as Envoy lists its own")
		Expect(node.GetClientFeatures()).To(BeEmpty())
	})

	It("becomes LIVE after initial_fetch_timeout when the management server never answers", func() {
		port := freePort() // nothing listens there
		s := Launch(newDir(), "bootstrap.yaml", adsBootstrap(port, "{initial_fetch_timeout: 1s}"))
		s.WaitForAdmin()
		Expect(s.Get("/ready").Status).To(Equal(503))
		Eventually(func() int { return s.Get("/ready").Status }, 10*time.Second).Should(Equal(200))
		Expect(statValue(s, "listener_manager.lds.init_fetch_timeout")).To(Equal("1"))
		Expect(statValue(s, "control_plane.connected_state")).To(Equal("0"))
		Expect(statValue(s, "listener_manager.lds.update_failure")).NotTo(Equal("0"))
		Eventually(s.Stderr).Should(ContainSubstring("ads: initial fetch timed out"))
		Expect(listenerNames(s)).To(BeEmpty())
	})

	It("applies the unknown-field policy to what arrives: warn and count by default, NACK under --reject-unknown-dynamic-fields", func() {
		withUnknown := listenerProto(adsListener("one", "unknown"))
		withUnknown.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 9999, protowire.VarintType), 1))
		m := startManagementServer()
		m.set(ldsSnapshot("v1", withUnknown))

		s := Start(newDir(), adsBootstrap(m.port, ""))
		waitLive(s)
		Expect(getBody(listenerAddr(s, "one"))).To(Equal("unknown"))
		Expect(statValue(s, "server.dynamic_unknown_fields")).To(Equal("1"))
		Eventually(s.Stderr).Should(ContainSubstring("unknown field in dynamic configuration was ignored"))

		strict := Start(newDir(), adsBootstrap(m.port, ""), "--reject-unknown-dynamic-fields")
		waitLive(strict)
		Expect(listenerNames(strict)).To(BeEmpty())
		Expect(strconv.Atoi(statValue(strict, "listener_manager.lds.update_rejected"))).To(BeNumerically(">=", 1))
		Expect(ldsRequests(m)).To(ContainElement(Satisfy(func(r *discoveryv3.DiscoveryRequest) bool {
			return strings.Contains(r.GetErrorDetail().GetMessage(), "resources[0]") && strings.Contains(r.GetErrorDetail().GetMessage(), "9999")
		})), "the NACK names the unknown field's path")
	})

	It("refuses an ADS cluster that is not a static cluster", func() {
		dir := newDir()
		cfg := adsBootstrap(freePort(), "")
		const service = `"grpc_services":[{"envoy_grpc":{"cluster_name":"xds"}}]`
		Expect(cfg).To(ContainSubstring(service))
		writeFile(dir+"/bootstrap.yaml", strings.Replace(cfg, service, `"grpc_services":[{"envoy_grpc":{"cluster_name":"nowhere"}}]`, 1))
		r := Run("-c", dir+"/bootstrap.yaml")
		Expect(r.ExitCode).To(Equal(1), "stdout: %s", r.Stdout)
		Expect(r.Stderr).To(ContainSubstring("dynamic_resources.ads_config.grpc_services[0]: envoy_grpc.cluster_name: unknown gRPC client cluster 'nowhere'"))
	})
})
