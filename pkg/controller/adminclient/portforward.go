package adminclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// PortForward reaches a pod's admin interface the way kubectl port-forward
// does: through the API server's pods/portforward subresource, which has
// the kubelet open the connection inside the pod's network namespace, to
// 127.0.0.1:<admin port>. It tries a WebSocket upgrade first (it passes
// HTTP/2-only proxies in front of the API server) and falls back to SPDY
// for API servers that refuse it. No local port is opened: each HTTP
// request gets its own pair of streams on the pod's upgraded connection.
type PortForward struct {
	config *rest.Config
	pods   rest.Interface
}

// NewPortForward returns the port-forward transport for the API server of
// cfg. The identity of cfg needs create and get on pods/portforward.
func NewPortForward(cfg *rest.Config) (*PortForward, error) {
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("port-forward transport: %w", err)
	}
	return &PortForward{config: cfg, pods: core.RESTClient()}, nil
}

// Open upgrades one connection to the pod's portforward subresource.
func (p *PortForward) Open(ctx context.Context, e Endpoint) (Conn, error) {
	u := p.pods.Post().Resource("pods").Namespace(e.Namespace).Name(e.Pod).SubResource("portforward").URL()
	dialer, err := p.dialer(u)
	if err != nil {
		return nil, fmt.Errorf("port-forward to %s: %w", e, err)
	}
	stream, err := dial(ctx, dialer)
	if err != nil {
		return nil, fmt.Errorf("port-forward to %s: %w", e, err)
	}
	c := &forwardConn{stream: stream, port: strconv.Itoa(int(e.Port))}
	c.transport = &http.Transport{
		DialContext: c.dialStream,
		// One stream pair per request: a stream is never reused, so that
		// an operation cannot see another's leftovers.
		DisableKeepAlives: true,
		Proxy:             nil,
	}
	return c, nil
}

// dialer tries SPDY over WebSocket, then plain SPDY when the upgrade is
// refused (API servers before 1.30, or with PortForwardWebsockets off).
func (p *PortForward) dialer(u *url.URL) (httpstream.Dialer, error) {
	rt, upgrader, err := spdy.RoundTripperFor(p.config)
	if err != nil {
		return nil, fmt.Errorf("spdy round tripper: %w", err)
	}
	spdyDialer := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, http.MethodPost, u)
	wsDialer, err := portforward.NewSPDYOverWebsocketDialer(u, p.config)
	if err != nil {
		return nil, fmt.Errorf("websocket dialer: %w", err)
	}
	return portforward.NewFallbackDialer(wsDialer, spdyDialer, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	}), nil
}

// dial runs the dialer, which takes no context, bounded by ctx: a
// connection that arrives after ctx is done is closed.
func dial(ctx context.Context, d httpstream.Dialer) (httpstream.Connection, error) {
	type result struct {
		conn httpstream.Connection
		err  error
	}
	done := make(chan result, 1)
	go func() {
		conn, _, err := d.Dial(portforward.PortForwardProtocolV1Name)
		done <- result{conn, err}
	}()
	select {
	case r := <-done:
		return r.conn, r.err
	case <-ctx.Done():
		go func() {
			if r := <-done; r.conn != nil {
				_ = r.conn.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// forwardConn is one upgraded port-forward connection to a pod.
type forwardConn struct {
	stream    httpstream.Connection
	port      string
	requestID atomic.Int64
	transport *http.Transport
}

// RoundTrip sends one request over a new pair of streams.
func (c *forwardConn) RoundTrip(req *http.Request) (*http.Response, error) {
	return c.transport.RoundTrip(req)
}

// Close closes the upgraded connection and every stream on it.
func (c *forwardConn) Close() error {
	c.transport.CloseIdleConnections()
	return c.stream.Close()
}

// dialStream opens the error and data streams of one forwarded connection,
// as kubectl does for each local connection.
func (c *forwardConn) dialStream(ctx context.Context, _, _ string) (net.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	headers := http.Header{}
	headers.Set(corev1.StreamType, corev1.StreamTypeError)
	headers.Set(corev1.PortHeader, c.port)
	headers.Set(corev1.PortForwardRequestIDHeader, strconv.FormatInt(c.requestID.Add(1), 10))
	errStream, err := c.stream.CreateStream(headers)
	if err != nil {
		return nil, fmt.Errorf("create error stream: %w", err)
	}
	// Nothing is written to the error stream.
	_ = errStream.Close()

	headers.Set(corev1.StreamType, corev1.StreamTypeData)
	data, err := c.stream.CreateStream(headers)
	if err != nil {
		// The kubelet may have failed the forward (nothing listening)
		// and reset the streams before the data stream was made: its
		// report on the error stream is the reason to give.
		sc := &streamConn{conn: c.stream, errStream: errStream, errDone: make(chan struct{})}
		go sc.readError()
		select {
		case <-sc.errDone:
		case <-time.After(time.Second):
		}
		c.stream.RemoveStreams(errStream)
		var fe *ForwardError
		if errors.As(sc.remoteErrNow(), &fe) {
			return nil, fe
		}
		return nil, fmt.Errorf("create data stream: %w", err)
	}
	sc := &streamConn{conn: c.stream, data: data, errStream: errStream, errDone: make(chan struct{})}
	go sc.readError()
	return sc, nil
}

// remoteErrNow is the error stream's report if readError has finished,
// nil otherwise.
func (s *streamConn) remoteErrNow() error {
	select {
	case <-s.errDone:
		return s.remoteErr
	default:
		return nil
	}
}

// streamConn is the net.Conn over one port-forward data stream. The
// kubelet reports a failure to reach the port (nothing listening, for
// instance) on the paired error stream and closes the data stream; Read
// returns that report in place of a bare EOF.
type streamConn struct {
	conn      httpstream.Connection
	data      httpstream.Stream
	errStream httpstream.Stream

	errDone   chan struct{}
	remoteErr error

	closeOnce sync.Once
}

// readError waits for the error stream's message, if any.
func (s *streamConn) readError() {
	defer close(s.errDone)
	msg, err := io.ReadAll(s.errStream)
	switch {
	case len(msg) > 0:
		// The kubelet resets the streams after writing its report, so
		// the report comes with an error.
		s.remoteErr = &ForwardError{Message: strings.TrimSpace(string(msg))}
	case err != nil && !isClosedError(err):
		s.remoteErr = fmt.Errorf("read port-forward error stream: %w", err)
	}
}

// Read reads the pod's bytes; at the end of the stream it reports the
// kubelet's error, if one came.
func (s *streamConn) Read(p []byte) (int, error) {
	n, err := s.data.Read(p)
	if err != nil && n == 0 {
		select {
		case <-s.errDone:
			if s.remoteErr != nil {
				return 0, s.remoteErr
			}
		case <-time.After(100 * time.Millisecond):
			// The error stream is still open: the data stream ended on
			// its own.
		}
	}
	return n, err
}

// Write sends bytes to the pod.
func (s *streamConn) Write(p []byte) (int, error) { return s.data.Write(p) }

// Close resets the data stream, dropping unsent bytes, and forgets both
// streams.
func (s *streamConn) Close() error {
	s.closeOnce.Do(func() {
		_ = s.data.Reset()
		s.conn.RemoveStreams(s.data, s.errStream)
	})
	return nil
}

// LocalAddr and RemoteAddr have no meaning on a stream; http.Transport only
// logs them.
func (s *streamConn) LocalAddr() net.Addr { return forwardAddr{} }

// RemoteAddr: see LocalAddr.
func (s *streamConn) RemoteAddr() net.Addr { return forwardAddr{} }

// SetDeadline and friends are not supported by streams; requests are
// bounded by their context instead, whose end closes the connection.
func (s *streamConn) SetDeadline(time.Time) error { return nil }

// SetReadDeadline: see SetDeadline.
func (s *streamConn) SetReadDeadline(time.Time) error { return nil }

// SetWriteDeadline: see SetDeadline.
func (s *streamConn) SetWriteDeadline(time.Time) error { return nil }

// forwardAddr is the address of a port-forward stream.
type forwardAddr struct{}

func (forwardAddr) Network() string { return "portforward" }
func (forwardAddr) String() string  { return "portforward" }

// ForwardError is the kubelet's report that it could not forward to the
// port, typically because nothing listens on it.
type ForwardError struct {
	Message string
}

func (e *ForwardError) Error() string { return "port-forward: " + e.Message }

// isClosedError reports an error that only says the stream was closed.
func isClosedError(err error) bool {
	return errors.Is(err, net.ErrClosed) || strings.Contains(err.Error(), "use of closed network connection") ||
		strings.Contains(err.Error(), "stream reset")
}
