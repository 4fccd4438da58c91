package setfilterstate

import (
	"net"
	"strings"
	"testing"

	sfsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/set_filter_state/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/emptypb"
	"sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/pkg/proxy/filterstate"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
)

// conn is a downstream connection with a server name and filter state.
type conn struct {
	net.Conn
	netfilter.ConnState
	sni string
}

func (c *conn) RequestedServerName() string { return c.sni }
func (c *conn) OnClose(func())              {}
func (c *conn) RemoteAddr() net.Addr        { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4000} }
func (c *conn) LocalAddr() net.Addr         { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 80} }

func compile(t *testing.T, y string) (netfilter.Filter, error) {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	var c sfsv3.Config
	if err := protojson.Unmarshal(j, &c); err != nil {
		t.Fatal(err)
	}
	return Factory{}.Compile(&c, netfilter.Context{})
}

func TestSetsTheConnectionFilterState(t *testing.T) {
	f, err := compile(t, `
on_new_connection:
- object_key: envoy.tcp_proxy.cluster
  format_string: {text_format_source: {inline_string: "backend-%REQUESTED_SERVER_NAME%"}}
on_downstream_tls_handshake:
- object_key: acme.seen
  factory_key: envoy.string
  # Sees what on_new_connection kept.
  format_string: {text_format_source: {inline_string: "%FILTER_STATE(envoy.tcp_proxy.cluster:PLAIN)% from %DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%"}}
`)
	if err != nil {
		t.Fatal(err)
	}
	c := &conn{sni: "api.test"}
	if r := f.(netfilter.ReadFilter).OnNewConnection(c); r != nil {
		t.Fatalf("refused: %+v", r)
	}
	if v, _ := c.FilterState(netfilter.ClusterStateKey); v != filterstate.String("backend-api.test") {
		t.Errorf("cluster %#v", v)
	}
	if _, ok := c.FilterState("acme.seen"); ok {
		t.Error("on_downstream_tls_handshake applied before the handshake")
	}
	if r := f.(netfilter.DataFilter).OnData(c); r != nil {
		t.Fatalf("refused: %+v", r)
	}
	if v, _ := c.FilterState("acme.seen"); v != filterstate.String("backend-api.test from 127.0.0.1") {
		t.Errorf("acme.seen %#v", v)
	}
}

func TestCompileErrors(t *testing.T) {
	_, err := compile(t, `
on_new_connection:
- object_key: acme.custom
  format_string: {text_format_source: {inline_string: "x"}}
on_downstream_tls_handshake:
- object_key: a
  factory_key: envoy.string
`)
	for _, want := range []string{
		"on_new_connection[0].object_key: 'acme.custom' does not have an object factory",
		"on_downstream_tls_handshake[0].format_string: required",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want one containing %q", err, want)
		}
	}
	if _, err := (Factory{}).Compile(&emptypb.Empty{}, netfilter.Context{}); err == nil {
		t.Error("another message was accepted")
	}
}
