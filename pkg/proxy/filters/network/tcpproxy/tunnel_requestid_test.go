package tcpproxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	rwqv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/formatter/req_without_query/v3"
	uuidv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/request_id/uuid/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
)

// startHeaderTunnel serves HTTP/1.1 CONNECT: it answers 200 with an
// x-up header, echoes, and sends the request's headers on seen.
func startHeaderTunnel(t *testing.T) (string, chan http.Header) {
	t.Helper()
	seen := make(chan http.Header, 10)
	addr := serveConnect(t, func(c net.Conn, br *bufio.Reader, req *http.Request) {
		seen <- req.Header
		_, _ = io.WriteString(c, "HTTP/1.1 200 Connection established\r\nX-Up: a\r\nX-Up: b\r\n\r\n")
		_, _ = io.Copy(c, br)
		_ = c.(*net.TCPConn).CloseWrite()
	})
	return addr, seen
}

func uuidExtension(t *testing.T) *hcmv3.RequestIDExtension {
	t.Helper()
	a, err := anypb.New(&uuidv3.UuidRequestIdConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return &hcmv3.RequestIDExtension{TypedConfig: a}
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// TestTunnelRequestID: with request_id_extension each tunnel request
// carries a new UUID under request_id_header, and the access log reads
// the same id from the dynamic metadata under request_id_metadata_key
// (or their defaults).
func TestTunnelRequestID(t *testing.T) {
	for _, tc := range []struct{ header, key, wantHeader, wantKey string }{
		{wantHeader: "X-Request-Id", wantKey: "tunnel_request_id"},
		{header: "X-Trace-Me", key: "rid", wantHeader: "X-Trace-Me", wantKey: "rid"},
	} {
		t.Run(tc.wantKey, func(t *testing.T) {
			addr, seen := startHeaderTunnel(t)
			h := newHarnessFormat(t, tunnelCfg("proxy", &tcpproxyv3.TcpProxy_TunnelingConfig{
				Hostname:             "b:1",
				RequestIdExtension:   uuidExtension(t),
				RequestIdHeader:      tc.header,
				RequestIdMetadataKey: tc.key,
				// The generated id wins over a configured value.
				HeadersToAdd: []*corev3.HeaderValueOption{{Header: &corev3.HeaderValue{Key: tc.wantHeader, Value: "configured"}}},
			}), fakeClusters{"proxy": {name: "proxy", hosts: []string{addr}}},
				"%DYNAMIC_METADATA(envoy.filters.network.tcp_proxy:"+tc.wantKey+")%\n")
			var ids []string
			for range 2 {
				if got := roundTrip(t, h.addr, "x"); got != "x" {
					t.Fatalf("echoed %q", got)
				}
				hdr := <-seen
				if vs := hdr.Values(tc.wantHeader); len(vs) != 1 || !uuidRE.MatchString(vs[0]) {
					t.Fatalf("%s: %q, want one UUID", tc.wantHeader, vs)
				}
				ids = append(ids, hdr.Get(tc.wantHeader))
			}
			if ids[0] == ids[1] {
				t.Errorf("two tunnels had the same id %s", ids[0])
			}
			waitFor(t, "two access logs", func() bool { return strings.Count(h.log.String(), "\n") == 2 })
			// The connections end in either order.
			got := strings.Fields(h.log.String())
			slices.Sort(got)
			slices.Sort(ids)
			if !slices.Equal(got, ids) {
				t.Errorf("access logs %q, want the ids %q", got, ids)
			}
		})
	}
}

// TestTunnelRequestIDOff: without request_id_extension no id is sent or
// kept, whatever request_id_header and request_id_metadata_key say.
func TestTunnelRequestIDOff(t *testing.T) {
	addr, seen := startHeaderTunnel(t)
	h := newHarnessFormat(t, tunnelCfg("proxy", &tcpproxyv3.TcpProxy_TunnelingConfig{
		Hostname: "b:1", RequestIdHeader: "x-rid", RequestIdMetadataKey: "rid",
	}), fakeClusters{"proxy": {name: "proxy", hosts: []string{addr}}},
		"%DYNAMIC_METADATA(envoy.filters.network.tcp_proxy:rid)%\n")
	roundTrip(t, h.addr, "x")
	if hdr := <-seen; hdr.Get("X-Rid") != "" || hdr.Get("X-Request-Id") != "" {
		t.Errorf("tunnel request headers %v carry an id", hdr)
	}
	waitFor(t, "the access log", func() bool { return h.log.String() != "" })
	if got := h.log.String(); got != "-\n" {
		t.Errorf("access log %q, want -", got)
	}
}

// TestWithRequestIDKeepsMetadata: the id joins the connection's dynamic
// metadata without changing the connection's own.
func TestWithRequestIDKeepsMetadata(t *testing.T) {
	own := &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{
		"envoy.filters.listener.proxy_protocol": {Fields: map[string]*structpb.Value{"tlv": structpb.NewStringValue("v")}},
		requestIDNamespace:                      {Fields: map[string]*structpb.Value{"other": structpb.NewStringValue("o")}},
	}}
	tn := &tunnel{requestIDKey: "k"}
	got := tn.withRequestID(own, "id")
	if v := got.GetFilterMetadata()[requestIDNamespace].GetFields()["k"].GetStringValue(); v != "id" {
		t.Errorf("id %q, want id", v)
	}
	if v := got.GetFilterMetadata()[requestIDNamespace].GetFields()["other"].GetStringValue(); v != "o" {
		t.Errorf("the namespace's other key: %q", v)
	}
	if got.GetFilterMetadata()["envoy.filters.listener.proxy_protocol"] == nil {
		t.Error("the listener filter's metadata is gone")
	}
	if _, ok := own.GetFilterMetadata()[requestIDNamespace].GetFields()["k"]; ok {
		t.Error("the connection's own metadata was modified")
	}
}

// TestTunnelPropagateResponseHeaders: the tunnel response's headers,
// :status first, are in the filter state for the access log.
func TestTunnelPropagateResponseHeaders(t *testing.T) {
	addr, _ := startHeaderTunnel(t)
	h := newHarnessFormat(t, tunnelCfg("proxy", &tcpproxyv3.TcpProxy_TunnelingConfig{
		Hostname: "b:1", PropagateResponseHeaders: true,
	}), fakeClusters{"proxy": {name: "proxy", hosts: []string{addr}}},
		"%FILTER_STATE(envoy.tcp_proxy.propagate_response_headers:TYPED)% %FILTER_STATE(envoy.tcp_proxy.propagate_response_headers:PLAIN)%\n")
	roundTrip(t, h.addr, "x")
	waitFor(t, "the access log", func() bool { return h.log.String() != "" })
	got := strings.ReplaceAll(h.log.String(), " ", "")
	want := `{"headers":[{"key":":status","value":"200"},{"key":"x-up","value":"a"},{"key":"x-up","value":"b"}]}-` + "\n"
	if got != want {
		t.Errorf("access log %q, want %q", got, want)
	}
}

// TestTunnelPropagateResponseTrailers: an HTTP/2 tunnel's response
// trailers are in the filter state once its body has ended; without
// propagate_response_trailers they are not.
func TestTunnelPropagateResponseTrailers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	srv := &http.Server{Protocols: p, ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Done")
		w.WriteHeader(200)
		// The proxy waits for the answer's head before it sends.
		_ = http.NewResponseController(w).Flush()
		b, _ := io.ReadAll(r.Body)
		_, _ = w.Write(b)
		w.Header().Set("X-Done", "yes")
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	for _, on := range []bool{true, false} {
		h := newHarnessFormat(t, tunnelCfg("proxy", &tcpproxyv3.TcpProxy_TunnelingConfig{
			Hostname: "b:1", PropagateResponseTrailers: on,
		}), fakeClusters{"proxy": {name: "proxy", hosts: []string{ln.Addr().String()}, h2: true}},
			"%FILTER_STATE(envoy.tcp_proxy.propagate_response_trailers:TYPED)%\n")
		if got := roundTrip(t, h.addr, "x"); got != "x" {
			t.Fatalf("echoed %q", got)
		}
		waitFor(t, "the access log", func() bool { return h.log.String() != "" })
		got := strings.ReplaceAll(h.log.String(), " ", "")
		want := `{"headers":[{"key":"x-done","value":"yes"}]}` + "\n"
		if !on {
			want = "-\n"
		}
		if got != want {
			t.Errorf("propagate_response_trailers %v: access log %q, want %q", on, got, want)
		}
	}
}

// TestTunnelFormatters: formatters add their operators to headers_to_add.
func TestTunnelFormatters(t *testing.T) {
	cfg := func(withFormatter bool) *tcpproxyv3.TcpProxy {
		tc := &tcpproxyv3.TcpProxy_TunnelingConfig{
			Hostname:     "b:1",
			HeadersToAdd: []*corev3.HeaderValueOption{{Header: &corev3.HeaderValue{Key: "x-p", Value: "%REQ_WITHOUT_QUERY(:path)%"}}},
		}
		if withFormatter {
			a, _ := anypb.New(&rwqv3.ReqWithoutQuery{})
			tc.Formatters = []*corev3.TypedExtensionConfig{{Name: "envoy.formatter.req_without_query", TypedConfig: a}}
		}
		return tunnelCfg("c", tc)
	}
	reg := testExtensions(t)
	if _, err := compileWith(cfg(true), reg); err != nil {
		t.Errorf("with the formatter: %v", err)
	}
	_, err := compileWith(cfg(false), reg)
	if err == nil || !strings.Contains(err.Error(), "tunneling_config.headers_to_add[0].header.value:") {
		t.Errorf("without the formatter: %v, want headers_to_add's value refused", err)
	}
}

func TestTunnelRequestIDConfigErrors(t *testing.T) {
	wrong, _ := anypb.New(&rwqv3.ReqWithoutQuery{})
	_, err := compileWith(tunnelCfg("c", &tcpproxyv3.TcpProxy_TunnelingConfig{
		Hostname:           "b:1",
		RequestIdHeader:    "bad header",
		RequestIdExtension: &hcmv3.RequestIDExtension{TypedConfig: wrong},
	}), testExtensions(t))
	for _, want := range []string{
		`tunneling_config.request_id_header: "bad header" is not a header name`,
		"tunneling_config.request_id_extension.typed_config",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want %s", err, want)
		}
	}
	if _, err := compile(tunnelCfg("c", &tcpproxyv3.TcpProxy_TunnelingConfig{Hostname: "b:1", RequestIdExtension: uuidExtension(t)})); err == nil {
		t.Error("request_id_extension accepted without extensions to resolve it")
	}
}
