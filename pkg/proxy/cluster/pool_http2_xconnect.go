//lint:file-ignore SA1019 golang.org/x/net/http2's client, deprecated for net/http's, is the only Go client that sends RFC 8441 extended CONNECT: net/http refuses the :protocol pseudo-header (Go 1.26).

package cluster

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"

	"golang.org/x/net/http2"
)

// newXConnectTransport builds the cluster's pool for RFC 8441 extended
// CONNECT streams (upgrades sent to an HTTP/2 upstream). net/http's client
// refuses the :protocol pseudo-header, golang.org/x/net/http2's sends it
// once the server announced SETTINGS_ENABLE_CONNECT_PROTOCOL; so these
// streams go on connections of their own, dialled, capped and guarded as
// the main pool's are, with the same windows and idle timeout.
func (c *Cluster) newXConnectTransport() xconnectPool {
	settings := &http.Transport{
		IdleConnTimeout: c.settings.protocol.idleTimeout,
		HTTP2: &http.HTTP2Config{
			MaxReceiveBufferPerStream:     c.settings.protocol.h2.streamWindow,
			MaxReceiveBufferPerConnection: c.settings.protocol.h2.connWindow,
			// hpack_table_size: announced, and the encoder's bound.
			MaxDecoderHeaderTableSize: c.settings.protocol.h2.hpackTableSize,
			MaxEncoderHeaderTableSize: c.settings.protocol.h2.hpackTableSize,
		},
	}
	// Linked to settings, the transport takes its HTTP/2 configuration
	// (windows, idle timeout) from there; settings itself sends nothing.
	t, err := http2.ConfigureTransports(settings)
	if err != nil {
		// Only a transport already configured for HTTP/2 fails, and
		// settings is new.
		t = &http2.Transport{IdleConnTimeout: c.settings.protocol.idleTimeout}
	}
	// The linked transport would only take connections settings dials;
	// without a pool of its own it dials through DialTLSContext.
	t.ConnPool = nil
	t.AllowHTTP = true
	t.DisableCompression = true
	t.DialTLSContext = func(ctx context.Context, _, addr string, _ *tls.Config) (net.Conn, error) {
		return c.dialHTTP2(ctx, addr)
	}
	return t
}

// xconnectPool is the extended CONNECT pool as the cluster uses it.
type xconnectPool interface {
	http.RoundTripper
	CloseIdleConnections()
}

// isExtendedConnect reports whether req is an extended CONNECT, which
// only the extended CONNECT pool can send.
func isExtendedConnect(req *http.Request) bool {
	return req.Method == http.MethodConnect && len(req.Header[":protocol"]) > 0
}
