package cluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	h11v3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/http_11_proxy/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// http11ProxyKey is the typed_filter_metadata key of an endpoint's (or its
// locality's) proxy address, an envoy.config.core.v3.Address.
const http11ProxyKey = "envoy.http11_proxy_transport_socket.proxy_address"

// maxConnectResponse bounds the proxy's answer to CONNECT, as Envoy's
// 2000 bytes.
const maxConnectResponse = 2000

// http11Proxy is the http_11_proxy transport socket
// (envoy.transport_sockets.http_11_proxy): a host whose metadata names a
// proxy address, or every host when default_proxy_address is set, is
// reached through that HTTP/1.1 proxy with CONNECT, and the transport
// socket it wraps (TLS, plaintext) runs over the tunnel.
type http11Proxy struct {
	// def is default_proxy_address ("ip:port"), "" for none.
	def string
}

// compileHTTP11Proxy reads the transport socket (not the one it wraps).
// Errors name the field below typed_config.
func compileHTTP11Proxy(m *h11v3.Http11ProxyUpstreamTransport) (*http11Proxy, error) {
	p := &http11Proxy{}
	if a := m.GetDefaultProxyAddress(); a != nil {
		s, err := proxyAddress(a)
		if err != nil {
			return nil, fmt.Errorf("default_proxy_address.%w", err)
		}
		p.def = s
	}
	return p, nil
}

// proxyAddress is an Address's "ip:port": a socket address with an IP
// and a port value, what Envoy's proxy addresses are.
func proxyAddress(a *corev3.Address) (string, error) {
	sa := a.GetSocketAddress()
	if sa == nil {
		return "", errors.New("socket_address: required")
	}
	ip, err := netip.ParseAddr(sa.GetAddress())
	if err != nil {
		return "", fmt.Errorf("socket_address.address: %q is not an IP address", sa.GetAddress())
	}
	if sa.GetPortValue() == 0 || sa.GetPortValue() > 65535 {
		return "", errors.New("socket_address.port_value: must be between 1 and 65535")
	}
	return netip.AddrPortFrom(ip, uint16(sa.GetPortValue())).String(), nil
}

// proxyFor is the proxy h is reached through: its endpoint metadata's
// address, else its locality's, else default_proxy_address; false for
// none (the host is dialled directly). An entry of another type, or not
// a socket address, is passed over, as Envoy ignores it.
func (p *http11Proxy) proxyFor(h *upstream.Host) (string, bool) {
	for _, md := range [...]*corev3.Metadata{h.Metadata, h.LocalityMetadata} {
		v := md.GetTypedFilterMetadata()[http11ProxyKey]
		if v == nil {
			continue
		}
		a := &corev3.Address{}
		if v.UnmarshalTo(a) != nil {
			continue
		}
		if s, err := proxyAddress(a); err == nil {
			return s, true
		}
	}
	return p.def, p.def != ""
}

// dialVia opens a connection to address, host h's: through h's HTTP/1.1
// proxy when the cluster has the http_11_proxy transport socket and the
// host a proxy, else directly with dial.
func (c *Cluster) dialVia(ctx context.Context, h *upstream.Host, address string, dial func(context.Context) (net.Conn, error)) (net.Conn, error) {
	if c.settings.h11 == nil {
		return dial(ctx)
	}
	proxy, ok := c.settings.h11.proxyFor(h)
	if !ok {
		return dial(ctx)
	}
	conn, err := c.dial(ctx, proxy)
	if err != nil {
		return nil, err
	}
	if err := connectThrough(ctx, conn, address); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return conn, nil
}

// connectThrough asks the proxy at the other end of conn for a tunnel to
// target with CONNECT, and reads its answer, which must be a 200 within
// maxConnectResponse bytes. It reads nothing past the answer's head: the
// tunnel's first bytes stay for the transport socket over it.
func connectThrough(ctx context.Context, conn net.Conn, target string) error {
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
		defer conn.SetDeadline(time.Time{})
	}
	if _, err := conn.Write([]byte("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n")); err != nil {
		return err
	}
	head := make([]byte, 0, 128)
	for !bytes.HasSuffix(head, []byte("\r\n\r\n")) {
		if len(head) >= maxConnectResponse {
			return fmt.Errorf("the proxy's answer to CONNECT is longer than %d bytes", maxConnectResponse)
		}
		// Read no further than the end the head could have: 4 bytes
		// less what of "\r\n\r\n" the head already ends with.
		n := 4 - endMatched(head)
		got, err := conn.Read(head[len(head) : len(head)+n : len(head)+n])
		head = head[:len(head)+got]
		if err != nil {
			return fmt.Errorf("reading the proxy's answer to CONNECT: %w", err)
		}
		if cap(head)-len(head) < 4 {
			head = append(make([]byte, 0, 2*cap(head)), head...)
		}
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(head)), nil)
	if err != nil {
		return fmt.Errorf("the proxy's answer to CONNECT: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return errors.New("the proxy answered CONNECT with " + strconv.Itoa(resp.StatusCode))
	}
	return nil
}

// endMatched is how many bytes b ends with of "\r\n\r\n" (a prefix of
// it).
func endMatched(b []byte) int {
	for k := 3; k > 0; k-- {
		if bytes.HasSuffix(b, []byte("\r\n\r\n"[:k])) {
			return k
		}
	}
	return 0
}
