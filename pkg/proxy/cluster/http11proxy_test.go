package cluster

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	h11v3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/http_11_proxy/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

func proxySocketAddress(ip string, port uint32) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address: ip, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
	}}}
}

func proxyMetadata(t *testing.T, a *corev3.Address) *corev3.Metadata {
	t.Helper()
	v, err := anypb.New(a)
	if err != nil {
		t.Fatal(err)
	}
	return &corev3.Metadata{TypedFilterMetadata: map[string]*anypb.Any{http11ProxyKey: v}}
}

func TestHTTP11ProxyFor(t *testing.T) {
	wrongType, _ := anypb.New(&structpb.Struct{})
	p, err := compileHTTP11Proxy(&h11v3.Http11ProxyUpstreamTransport{DefaultProxyAddress: proxySocketAddress("10.0.0.9", 3128)})
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		h    *upstream.Host
		want string
	}{
		"endpoint's": {&upstream.Host{Metadata: proxyMetadata(t, proxySocketAddress("10.0.0.1", 8080)), LocalityMetadata: proxyMetadata(t, proxySocketAddress("10.0.0.2", 8080))}, "10.0.0.1:8080"},
		"locality's": {&upstream.Host{LocalityMetadata: proxyMetadata(t, proxySocketAddress("10.0.0.2", 8080))}, "10.0.0.2:8080"},
		"wrong type": {&upstream.Host{Metadata: &corev3.Metadata{TypedFilterMetadata: map[string]*anypb.Any{http11ProxyKey: wrongType}}}, "10.0.0.9:3128"},
		"default":    {&upstream.Host{}, "10.0.0.9:3128"},
	}
	for name, tc := range tests {
		if got, ok := p.proxyFor(tc.h); !ok || got != tc.want {
			t.Errorf("%s: proxy %q, %v; want %q", name, got, ok, tc.want)
		}
	}
	if got, ok := (&http11Proxy{}).proxyFor(&upstream.Host{}); ok {
		t.Errorf("no proxy anywhere: %q, want none", got)
	}
	if _, err := compileHTTP11Proxy(&h11v3.Http11ProxyUpstreamTransport{DefaultProxyAddress: proxySocketAddress("proxy.local", 3128)}); err == nil || !strings.Contains(err.Error(), "default_proxy_address.socket_address.address") {
		t.Errorf("a hostname as default_proxy_address: %v", err)
	}
}

// TestConnectThrough checks the CONNECT request, that a 200's head is
// read and nothing after it, and that another status fails.
func TestConnectThrough(t *testing.T) {
	for _, tc := range []struct {
		answer  string
		wantErr string
	}{
		{"HTTP/1.1 200 Connection established\r\nVia: test\r\n\r\ntunnel bytes", ""},
		{"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n", "the proxy answered CONNECT with 403"},
		{"HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", 3000) + "\r\n\r\n", "longer than 2000 bytes"},
	} {
		client, server := net.Pipe()
		got := make(chan *http.Request, 1)
		go func() {
			req, err := http.ReadRequest(bufio.NewReader(server))
			if err == nil {
				got <- req
			}
			_, _ = io.WriteString(server, tc.answer)
			_ = server.Close()
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := connectThrough(ctx, client, "127.0.0.1:9000")
		cancel()
		req := <-got
		if req.Method != http.MethodConnect || req.RequestURI != "127.0.0.1:9000" || req.Host != "127.0.0.1:9000" {
			t.Errorf("request %s %s (Host %s), want CONNECT 127.0.0.1:9000", req.Method, req.RequestURI, req.Host)
		}
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("answer %.30q: %v", tc.answer, err)
		case tc.wantErr == "":
			rest, _ := io.ReadAll(client)
			if string(rest) != "tunnel bytes" {
				t.Errorf("after the answer: %q, want the tunnel's bytes", rest)
			}
		case err == nil || !strings.Contains(err.Error(), tc.wantErr):
			t.Errorf("answer %.30q: %v, want %q", tc.answer, err, tc.wantErr)
		}
		_ = client.Close()
	}
}
