package cluster

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	rawbufferv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/raw_buffer/v3"
	taptransportv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tap/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tap"
	taptransport "github.com/outrigger-dev/outrigger/pkg/proxy/tap/transport"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

// socketRegistry knows the upstream transport sockets the tests use.
func socketRegistry(t *testing.T) *extension.Registry {
	t.Helper()
	reg, err := extension.New(
		extension.Of("envoy.transport_sockets.raw_buffer", tlsconfig.UpstreamCategory, &rawbufferv3.RawBuffer{}, nil),
		extension.Of(tlsconfig.Name, tlsconfig.UpstreamCategory, &tlsv3.UpstreamTlsContext{}, nil),
		extension.Of(taptransport.Name, tlsconfig.UpstreamCategory, &taptransportv3.Tap{}, nil),
	)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// md is metadata with fields under envoy.transport_socket_match.
func md(t *testing.T, fields map[string]any) *corev3.Metadata {
	t.Helper()
	s, err := structpb.NewStruct(fields)
	if err != nil {
		t.Fatal(err)
	}
	return &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{socketMatchFilter: s}}
}

func TestSocketMatchResolve(t *testing.T) {
	label := func(k string, v any) socketLabel {
		val, err := structpb.NewValue(v)
		if err != nil {
			t.Fatal(err)
		}
		return socketLabel{key: k, value: val}
	}
	m := socketMatches{list: []socketMatch{
		{name: "istio", labels: []socketLabel{label("tlsMode", "istio")}},
		{name: "two", labels: []socketLabel{label("a", "x"), label("n", 1.0)}},
		{name: "list", labels: []socketLabel{label("l", []any{"p", "q"})}},
	}}
	other := &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"envoy.lb": {Fields: map[string]*structpb.Value{"tlsMode": structpb.NewStringValue("istio")}}}}
	tests := map[string]struct {
		ep, loc *corev3.Metadata
		want    int
	}{
		"no metadata":                  {want: 0},
		"endpoint match":               {ep: md(t, map[string]any{"tlsMode": "istio", "extra": true}), want: 1},
		"every label needed":           {ep: md(t, map[string]any{"a": "x"}), want: 0},
		"every label":                  {ep: md(t, map[string]any{"a": "x", "n": 1}), want: 2},
		"type matters":                 {ep: md(t, map[string]any{"a": "x", "n": "1"}), want: 0},
		"a list is one value":          {ep: md(t, map[string]any{"l": []any{"p", "q"}}), want: 3},
		"not an element of the list":   {ep: md(t, map[string]any{"l": "p"}), want: 0},
		"another filter":               {ep: other, want: 0},
		"locality when endpoint fails": {ep: md(t, map[string]any{"tlsMode": "disabled"}), loc: md(t, map[string]any{"tlsMode": "istio"}), want: 1},
		"endpoint before locality":     {ep: md(t, map[string]any{"a": "x", "n": 1}), loc: md(t, map[string]any{"tlsMode": "istio"}), want: 2},
		"first entry wins":             {ep: md(t, map[string]any{"tlsMode": "istio", "a": "x", "n": 1}), want: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := m.resolve(tc.ep, tc.loc); got != tc.want {
				t.Errorf("resolve = %d, want %d", got, tc.want)
			}
		})
	}
	// An entry without labels matches every host, with metadata or not.
	all := socketMatches{list: []socketMatch{{name: "all"}}}
	if got := all.resolve(nil, nil); got != 1 {
		t.Errorf("an empty match gave %d, want 1", got)
	}
}

// echoTLS serves TLS with a certificate of ca on a loopback port, each
// connection echoing what it reads, and returns the port.
func echoTLS(t *testing.T, ca *tlstest.CA) int {
	t.Helper()
	leaf, err := ca.Issue(tlstest.Options{IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	return serveListener(t, ln, echoConn)
}

// socketMatchCluster is a STATIC cluster named web of a TLS host (the
// tlsMode: istio match, trusting ca) and a plaintext one (the cluster's
// raw_buffer transport_socket), with health check criteria hc (none when
// "").
func socketMatchCluster(ca *tlstest.CA, tlsPort, plainPort int, hc string) string {
	caPEM := strings.ReplaceAll(string(ca.PEM), "\n", "\\n")
	return `
- name: web
  connect_timeout: 5s
  transport_socket:
    name: envoy.transport_sockets.raw_buffer
    typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer}
  transport_socket_matches:
  - name: tlsMode-istio
    match: {tlsMode: istio}
    transport_socket:
      name: envoy.transport_sockets.tls
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext
        common_tls_context:
          validation_context: {trusted_ca: {inline_string: "` + caPEM + `"}}` + hc + `
  load_assignment:
    cluster_name: web
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: ` + strconv.Itoa(tlsPort) + `}}}
        metadata: {filter_metadata: {envoy.transport_socket_match: {tlsMode: istio}}}
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: ` + strconv.Itoa(plainPort) + `}}}
`
}

// echoed writes msg on conn and reads it back.
func echoed(t *testing.T, conn net.Conn, msg string) {
	t.Helper()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(conn, got); err != nil {
		t.Fatal(err)
	}
	if string(got) != msg {
		t.Fatalf("read %q, want %q", got, msg)
	}
}

func TestSocketMatchConnectsEachHostWithItsSocket(t *testing.T) {
	ca, err := tlstest.NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	tlsPort := echoTLS(t, ca)
	plainPort := loopbackServer(t, echoConn)
	m, store, _ := newTestManager(t, socketMatchCluster(ca, tlsPort, plainPort, ""), func(o *Options) { o.Extensions = socketRegistry(t) })
	c := m.Cluster("web")
	hosts := c.Hosts()
	if len(hosts) != 2 || hosts[0].Socket != 1 || hosts[1].Socket != 0 {
		t.Fatalf("hosts' sockets: %v", hosts)
	}
	for _, h := range hosts {
		conn, err := c.ConnectHost(context.Background(), h)
		if err != nil {
			t.Fatalf("connect %s: %v", h.Address, err)
		}
		if isTLS := conn.(*trackedConn).TLSInfo() != nil; isTLS != (h.Socket == 1) {
			t.Errorf("connection to %s (socket %d): TLS %v", h.Address, h.Socket, isTLS)
		}
		echoed(t, conn, "ping "+h.Address)
		_ = conn.Close()
	}
	for name, want := range map[string]uint64{
		"cluster.web.tlsMode-istio.total_match_count": 1,
		"cluster.web.default.total_match_count":       1,
		"cluster.web.ssl.handshake":                   1,
	} {
		if got := store.Counter(name).Value(); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}

func TestSocketMatchHealthCheckCriteria(t *testing.T) {
	ca, err := tlstest.NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	tlsPort := echoTLS(t, ca)
	plainPort := loopbackServer(t, echoConn)
	hc := `
  health_checks:
  - {timeout: 5s, interval: 60s, unhealthy_threshold: 1, healthy_threshold: 1, tcp_health_check: {}, transport_socket_match_criteria: {tlsMode: istio}}`
	m, store, _ := newTestManager(t, socketMatchCluster(ca, tlsPort, plainPort, hc), func(o *Options) { o.Extensions = socketRegistry(t) })
	c := m.Cluster("web")
	hosts := c.Hosts()
	// The criteria choose TLS for the checks of both hosts, whatever the
	// hosts' own sockets.
	for _, h := range hosts {
		conn, err := c.dialCheck(context.Background(), h, "127.0.0.1:"+strconv.Itoa(tlsPort), nil)
		if err != nil {
			t.Fatalf("check connection for %s: %v", h.Address, err)
		}
		if _, ok := conn.(*tls.Conn); !ok {
			t.Errorf("check connection for %s is %T, not TLS", h.Address, conn)
		}
		echoed(t, conn, "check")
		_ = conn.Close()
	}
	// Each check connection resolved the criteria once more, as in Envoy.
	if got := store.Counter("cluster.web.tlsMode-istio.total_match_count").Value(); got != 3 {
		t.Errorf("tlsMode-istio.total_match_count = %d, want 3 (one host, two checks)", got)
	}
}

func TestSocketMatchWithoutCriteriaChecksWithTheHostsSocket(t *testing.T) {
	ca, err := tlstest.NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	tlsPort := echoTLS(t, ca)
	plainPort := loopbackServer(t, echoConn)
	m, _, _ := newTestManager(t, socketMatchCluster(ca, tlsPort, plainPort, ""), func(o *Options) { o.Extensions = socketRegistry(t) })
	c := m.Cluster("web")
	for _, h := range c.Hosts() {
		conn, err := c.dialCheck(context.Background(), h, h.Address, nil)
		if err != nil {
			t.Fatalf("check connection for %s: %v", h.Address, err)
		}
		if _, ok := conn.(*tls.Conn); ok != (h.Socket == 1) {
			t.Errorf("check connection for %s (socket %d) is %T", h.Address, h.Socket, conn)
		}
		echoed(t, conn, "check")
		_ = conn.Close()
	}
}

func TestSocketMatchEDSMetadata(t *testing.T) {
	m, store, _ := newTestManager(t, `
- name: backend
  type: EDS
  eds_cluster_config: {service_name: backend}
  transport_socket_matches:
  - name: istio
    match: {tlsMode: istio}
    transport_socket:
      name: envoy.transport_sockets.tls
      typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext}
`, func(o *Options) { o.Extensions = socketRegistry(t) })
	c := m.EDSClusters()[0]
	ep := func(port uint32, meta *corev3.Metadata) *endpointv3.LbEndpoint {
		return &endpointv3.LbEndpoint{Metadata: meta, HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
			Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
				Address: "127.0.0.1", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
			}}},
		}}}
	}
	apply := func(cla *endpointv3.ClusterLoadAssignment) {
		t.Helper()
		hs, err := c.EDSHosts(cla)
		if err != nil {
			t.Fatal(err)
		}
		c.SetEDSHosts(hs)
	}
	istio := md(t, map[string]any{"tlsMode": "istio"})
	apply(&endpointv3.ClusterLoadAssignment{ClusterName: "backend", Endpoints: []*endpointv3.LocalityLbEndpoints{
		{LbEndpoints: []*endpointv3.LbEndpoint{ep(1001, istio), ep(1002, nil)}},
		{Metadata: istio, Locality: &corev3.Locality{Zone: "b"}, LbEndpoints: []*endpointv3.LbEndpoint{ep(1003, nil)}},
	}})
	got := map[string]int{}
	for _, h := range c.Hosts() {
		got[h.Address] = h.Socket
	}
	if got["127.0.0.1:1001"] != 1 || got["127.0.0.1:1002"] != 0 || got["127.0.0.1:1003"] != 1 {
		t.Fatalf("sockets by address: %v", got)
	}
	// An update that keeps the hosts resolves nothing again; one that
	// changes a host's metadata makes it a new host, resolved again.
	apply(&endpointv3.ClusterLoadAssignment{ClusterName: "backend", Endpoints: []*endpointv3.LocalityLbEndpoints{
		{LbEndpoints: []*endpointv3.LbEndpoint{ep(1001, istio), ep(1002, istio)}},
		{Metadata: istio, Locality: &corev3.Locality{Zone: "b"}, LbEndpoints: []*endpointv3.LbEndpoint{ep(1003, nil)}},
	}})
	for _, h := range c.Hosts() {
		if h.Socket != 1 {
			t.Errorf("%s has socket %d after the update, want 1", h.Address, h.Socket)
		}
	}
	if got, want := store.Counter("cluster.backend.istio.total_match_count").Value(), uint64(3); got != want {
		t.Errorf("istio.total_match_count = %d, want %d", got, want)
	}
	if got, want := store.Counter("cluster.backend.default.total_match_count").Value(), uint64(1); got != want {
		t.Errorf("default.total_match_count = %d, want %d", got, want)
	}
}

func TestSocketMatchErrors(t *testing.T) {
	tests := map[string]struct {
		yaml string
		want string
	}{
		"no transport socket": {
			yaml: `
- name: web
  transport_socket_matches: [{name: a, match: {x: y}}]`,
			want: "static_resources.clusters[0].transport_socket_matches[0].transport_socket: required",
		},
		"a tap in a match": {
			yaml: `
- name: web
  transport_socket_matches:
  - name: a
    transport_socket:
      name: envoy.transport_sockets.tap
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.transport_sockets.tap.v3.Tap
        common_config: {admin_config: {config_id: t}}
        transport_socket: {name: envoy.transport_sockets.raw_buffer, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer}}`,
			want: "static_resources.clusters[0].transport_socket_matches[0].transport_socket: a tap transport socket is not supported in transport_socket_matches",
		},
		"a bad TLS context": {
			yaml: `
- name: web
  transport_socket_matches:
  - name: a
    transport_socket:
      name: envoy.transport_sockets.tls
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext
        common_tls_context: {validation_context: {trusted_ca: {inline_string: "not a certificate"}}}`,
			want: "static_resources.clusters[0].transport_socket_matches[0].transport_socket.typed_config.common_tls_context",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := NewManager(parseClusters(t, tc.yaml), Options{Stats: stats.NewStore(), Extensions: socketRegistry(t), Taps: &tap.Registry{}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			configErrors(t, err)
		})
	}
}
