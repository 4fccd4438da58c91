package e2e

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/types/known/structpb"
)

var _ = Describe("transport_socket_matches: a transport socket per host", func() {
	// istioTLS is the TLS entry Istio's auto mTLS adds (trusting f's CA,
	// SNI a.example.com), as a transport_socket_matches list.
	istioTLS := func(f *tlsFiles) string {
		return `[{name: tlsMode-istio, match: {tlsMode: istio}, transport_socket: ` +
			upstreamTLS(`, sni: a.example.com, common_tls_context: {validation_context: {trusted_ca: {filename: `+f.ca+`}}}`) + `}]`
	}
	const tlsBody = "sni=a.example.com alpn=http/1.1 proto=HTTP/1.1 peer=-"
	// answers sends n GETs to url and counts the answers by body.
	answers := func(url string, n int) map[string]int {
		GinkgoHelper()
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		out := map[string]int{}
		for range n {
			r := httpDo(client, http.MethodGet, url, nil, nil)
			out[fmt.Sprintf("%d %s", r.Status, r.Body)]++
		}
		return out
	}

	It("connects each host with the socket its endpoint or locality metadata matches, health checks with the criteria's, and counts the matches", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		tlsUp := startTLSUpstream(f, false)
		plain := startUpstream(false)
		// mesh: a TLS host labelled tlsMode: istio and a plaintext one
		// (the cluster's raw_buffer socket).
		mesh := fmt.Sprintf(`{name: mesh, connect_timeout: 2s, transport_socket_matches: %s,
  transport_socket: {name: envoy.transport_sockets.raw_buffer, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer}},
  load_assignment: {cluster_name: mesh, endpoints: [{lb_endpoints: [
    {endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}, metadata: {filter_metadata: {envoy.transport_socket_match: {tlsMode: istio}}}},
    {endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}]}]}}`, istioTLS(f), tlsUp, plain.port)
		// byzone: the locality's metadata matches, the endpoint has none.
		byzone := fmt.Sprintf(`{name: byzone, connect_timeout: 2s, transport_socket_matches: %s,
  load_assignment: {cluster_name: byzone, endpoints: [{metadata: {filter_metadata: {envoy.transport_socket_match: {tlsMode: istio}}}, lb_endpoints: [
    {endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}]}]}}`, istioTLS(f), tlsUp)
		// checked and unchecked: a TLS host without metadata (its traffic
		// would be plaintext); checked's health checks choose TLS by
		// transport_socket_match_criteria, unchecked's use the host's.
		checkedCluster := func(name, criteria string) string {
			return fmt.Sprintf(`{name: %s, connect_timeout: 2s, transport_socket_matches: %s,
  health_checks: [{timeout: 2s, interval: 1s, unhealthy_threshold: 1, healthy_threshold: 1, http_health_check: {path: /healthz}%s}],
  load_assignment: {cluster_name: %s, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}]}]}}`,
				name, istioTLS(f), criteria, name, tlsUp)
		}
		chain := `{filters: [` + routingHCM("UPLOG %REQ(:PATH)% %RESPONSE_CODE%", "mesh", "byzone") + `]}`
		s := Start(dir, tlsBootstrap(0, "", []string{chain}, mesh, byzone,
			checkedCluster("checked", ", transport_socket_match_criteria: {tlsMode: istio}"), checkedCluster("unchecked", "")))
		base := "http://" + listenerAddr(s, "tls") + "/"

		// Round robin reaches both hosts, each over its own socket.
		Expect(answers(base+"mesh", 4)).To(Equal(map[string]int{"200 " + tlsBody: 2, "200 ok": 2}))
		Expect(answers(base+"byzone", 2)).To(Equal(map[string]int{"200 " + tlsBody: 2}))

		// One host resolved per socket, under Envoy's names; the TLS
		// connections count in the cluster's ssl.* stats.
		Expect(statValue(s, "cluster.mesh.tlsMode-istio.total_match_count")).To(Equal("1"))
		Expect(statValue(s, "cluster.mesh.default.total_match_count")).To(Equal("1"))
		Expect(statValue(s, "cluster.byzone.tlsMode-istio.total_match_count")).To(Equal("1"))
		Expect(statValue(s, "cluster.byzone.default.total_match_count")).To(Equal("0"))
		Expect(strconv.Atoi(statValue(s, "cluster.mesh.ssl.handshake"))).To(BeNumerically(">=", 1))

		// The criteria's TLS checks pass; the plaintext ones fail.
		Eventually(func() string { return statValue(s, "cluster.checked.health_check.success") }).ShouldNot(Equal("0"))
		Eventually(func() string { return statValue(s, "cluster.unchecked.health_check.failure") }).ShouldNot(Equal("0"))
		Expect(statValue(s, "cluster.checked.health_check.failure")).To(Equal("0"))
		Expect(s.Get("/clusters").Body).To(ContainSubstring(fmt.Sprintf("checked::127.0.0.1:%d::health_flags::healthy", tlsUp)))
		Expect(s.Get("/clusters").Body).To(ContainSubstring(fmt.Sprintf("unchecked::127.0.0.1:%d::health_flags::/failed_active_hc", tlsUp)))
		// Each check connection resolves the criteria, as in Envoy.
		Expect(strconv.Atoi(statValue(s, "cluster.checked.tlsMode-istio.total_match_count"))).To(BeNumerically(">=", 1))

		// The configuration shows as given.
		dump := s.Get("/config_dump?resource=static_clusters").Body
		Expect(dump).To(ContainSubstring(`"transport_socket_matches"`))
		Expect(dump).To(ContainSubstring(`"tlsMode-istio"`))
		Expect(s.Get("/stats/prometheus").Body).To(MatchRegexp(`# HELP \S*total_match_count `))
	})

	It("refuses what it does not implement with its path", func() {
		tapped := `{name: web, connect_timeout: 1s, transport_socket_matches: [{name: t, match: {}, transport_socket: {name: envoy.transport_sockets.tap, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tap.v3.Tap,
  common_config: {admin_config: {config_id: x}}, transport_socket: {name: envoy.transport_sockets.raw_buffer, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer}}}}}],
  load_assignment: {cluster_name: web, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 1}}}}]}]}}`
		r, _ := validate("tsm.yaml", tlsBootstrap(0, "", []string{`{filters: [` + routingHCM("%RESPONSE_CODE%", "web") + `]}`}, tapped))
		Expect(r.ExitCode).NotTo(Equal(0))
		Expect(r.Stderr + r.Stdout).To(ContainSubstring("static_resources.clusters[0].transport_socket_matches[0].transport_socket: a tap transport socket is not supported in transport_socket_matches"))
	})

	It("takes the endpoints' tlsMode from EDS", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		tlsUp := startTLSUpstream(f, false)
		b := startNamed("B")
		m := startManagementServer()
		cluster := edsCluster("backend", "backend-svc", "")
		cluster["transport_socket_matches"] = flowYAML(istioTLS(f))
		ingress := []*listenerv3.Listener{listenerProto(listenerDef{Name: "ingress", Chains: []string{routeToCluster("eds_ingress", "backend")}})}
		s := Launch(dir, "bootstrap.yaml", adsBootstrap(m.port, "", cluster))
		s.WaitForAdmin()

		istio, err := structpb.NewStruct(map[string]any{"tlsMode": "istio"})
		Expect(err).NotTo(HaveOccurred())
		cla := loadAssignment("backend-svc", edsEndpoint{port: tlsUp}, edsEndpoint{port: b})
		cla.Endpoints[0].LbEndpoints[0].Metadata = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"envoy.transport_socket_match": istio}}
		m.set(adsSnapshot("v1", ingress, cla))
		waitLive(s)
		url := "http://" + listenerAddr(s, "ingress") + "/"
		Expect(answers(url, 4)).To(Equal(map[string]int{"200 " + tlsBody: 2, "200 B": 2}))
		Expect(statValue(s, "cluster.backend.tlsMode-istio.total_match_count")).To(Equal("1"))
		Expect(statValue(s, "cluster.backend.default.total_match_count")).To(Equal("1"))

		// The label moves to the other host's locality: B is now dialled
		// with TLS (and fails), the first host in plaintext.
		moved := loadAssignment("backend-svc", edsEndpoint{port: tlsUp}, edsEndpoint{port: b})
		moved.Endpoints[1].Metadata = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"envoy.transport_socket_match": istio}}
		m.set(adsSnapshot("v2", ingress, moved))
		waitStat(s, "cluster.backend.version_text", `"v2"`)
		Expect(statValue(s, "cluster.backend.tlsMode-istio.total_match_count")).To(Equal("2"))
		Expect(statValue(s, "cluster.backend.default.total_match_count")).To(Equal("2"))
		// The TLS server answers plaintext with 400; B's handshake fails.
		got := answers(url, 4)
		Expect(got).To(HaveLen(2), "%v", got)
		Expect(got).To(HaveKey(HavePrefix("400 ")))
		Expect(got).To(HaveKey(HavePrefix("503 ")))
	})
})
