package e2e

import (
	"strings"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

var _ = Describe("xDS: deprecated fields in discovered resources", func() {
	It("warns about and counts each deprecated field of a cluster and a listener, on every update that brings them (a cluster only when it changed)", func() {
		a := startNamed("A")
		m := startManagementServer()
		// The connection manager in the listener's typed_config sets a
		// deprecated field; so does the cluster.
		chain := strings.Replace(routeToCluster("depr", "svc"), "stat_prefix: depr, ",
			"stat_prefix: depr, http2_protocol_options: {stream_error_on_invalid_http_messaging: true}, ", 1)
		ls := []*listenerv3.Listener{listenerProto(listenerDef{Name: "ingress", Chains: []string{chain}})}
		c := clusterProto("svc", a, "")
		//lint:ignore SA1019 the spec sends a deprecated field on purpose
		c.HttpProtocolOptions = &corev3.Http1ProtocolOptions{}
		m.set(xdsSnapshot("v1", ls, []*clusterv3.Cluster{c}))
		s := Start(newDir(), cdsBootstrap(m.port))
		waitLive(s)
		Expect(getBody(listenerAddr(s, "ingress"))).To(Equal("A"), "the resources were accepted")

		Eventually(s.Stderr).Should(ContainSubstring("Using deprecated option 'envoy.config.cluster.v3.Cluster.http_protocol_options'"))
		Expect(s.Stderr()).To(ContainSubstring("Using deprecated option 'envoy.config.core.v3.Http2ProtocolOptions.stream_error_on_invalid_http_messaging'"))
		Expect(s.Stderr()).To(ContainSubstring("resources[0].filter_chains[0].filters[0].typed_config.http2_protocol_options.stream_error_on_invalid_http_messaging"))
		Expect(statValue(s, "runtime.deprecated_feature_use")).To(Equal("2"))
		Expect(statValue(s, "runtime.deprecated_feature_seen_since_process_start")).To(Equal("2"))

		// Each update that brings the resources checks them again, as in
		// Envoy: a changed cluster and the listener count again.
		c2 := proto.Clone(c).(*clusterv3.Cluster)
		c2.ConnectTimeout = durationpb.New(2 * time.Second)
		m.set(xdsSnapshot("v2", ls, []*clusterv3.Cluster{c2}))
		waitStat(s, "cluster_manager.cds.version_text", `"v2"`)
		waitStat(s, "listener_manager.lds.version_text", `"v2"`)
		Eventually(func() string { return statValue(s, "runtime.deprecated_feature_use") }).Should(Equal("4"))
		Expect(statValue(s, "runtime.deprecated_feature_seen_since_process_start")).To(Equal("4"))

		// A cluster resent unchanged is not checked again (unlike Envoy,
		// see docs/compat.md); the listener is.
		m.set(xdsSnapshot("v3", ls, []*clusterv3.Cluster{c2}))
		waitStat(s, "cluster_manager.cds.version_text", `"v3"`)
		waitStat(s, "listener_manager.lds.version_text", `"v3"`)
		Eventually(func() string { return statValue(s, "runtime.deprecated_feature_use") }).Should(Equal("5"))
		Consistently(func() string { return statValue(s, "runtime.deprecated_feature_use") }, "300ms").Should(Equal("5"))
	})

	It("counts nothing for resources without deprecated fields", func() {
		a := startNamed("A")
		m := startManagementServer()
		ls := []*listenerv3.Listener{listenerProto(listenerDef{Name: "ingress", Chains: []string{routeToCluster("plain", "svc")}})}
		m.set(xdsSnapshot("v1", ls, []*clusterv3.Cluster{clusterProto("svc", a, "")}))
		s := Start(newDir(), cdsBootstrap(m.port))
		waitLive(s)
		Expect(getBody(listenerAddr(s, "ingress"))).To(Equal("A"))
		Expect(statValue(s, "runtime.deprecated_feature_use")).To(Equal("0"))
		Expect(s.Stderr()).NotTo(ContainSubstring("Using deprecated option"))
	})
})
