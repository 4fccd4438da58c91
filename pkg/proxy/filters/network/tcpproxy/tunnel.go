package tcpproxy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tunnelhttp"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// tunnel is a compiled tunneling_config: the TCP stream goes upstream as
// the body of an HTTP CONNECT (or POST) request, over HTTP/1.1 or HTTP/2
// as the cluster speaks.
type tunnel struct {
	hostname *accesslog.Formatter
	usePost  bool
	postPath string
	headers  []tunnelhttp.Header

	// requestID is set by request_id_extension (Envoy's UUID extension,
	// the only one): each tunnel request carries a new UUID under
	// requestIDHeader, which the connection's dynamic metadata keeps
	// under envoy.filters.network.tcp_proxy / requestIDKey for the
	// access logs.
	requestID       bool
	requestIDHeader string
	requestIDKey    string
	// propagateHeaders and propagateTrailers keep the tunnel response's
	// headers and trailers in the connection's filter state
	// (propagate_response_headers, propagate_response_trailers).
	propagateHeaders, propagateTrailers bool
}

// maxTunnelResponseHead bounds the HTTP/1.1 response head read from the
// upstream proxy.
const maxTunnelResponseHead = 64 << 10

// compileTunnel compiles a tunneling_config; errors name the field below
// tunneling_config. reg resolves its request id extension and formatters.
func compileTunnel(tc *tcpproxyv3.TcpProxy_TunnelingConfig, reg *extension.Registry) (*tunnel, error) {
	var errs []error
	t := &tunnel{usePost: tc.GetUsePost(), postPath: tc.GetPostPath()}
	// As Envoy's, formatters add operators to headers_to_add only.
	var fmts accesslog.Formatters
	if len(tc.GetFormatters()) > 0 {
		var err error
		if reg == nil {
			err = errors.New("formatters: no formatter extensions in this context")
		} else {
			fmts, err = accesslog.CompileFormatters(tc.GetFormatters(), reg)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if tc.GetHostname() == "" {
		errs = append(errs, errors.New("hostname: required"))
	}
	var err error
	if t.hostname, err = accesslog.Text(tc.GetHostname(), true); err != nil {
		errs = append(errs, fmt.Errorf("hostname: %w", err))
	}
	switch {
	case t.postPath != "" && !t.usePost:
		errs = append(errs, errors.New("post_path: needs use_post"))
	case t.postPath == "":
		t.postPath = "/"
	case !strings.HasPrefix(t.postPath, "/"):
		errs = append(errs, errors.New("post_path: must start with /"))
	}
	for i, o := range tc.GetHeadersToAdd() {
		h, err := tunnelhttp.CompileHeader(o, fmts)
		if err != nil {
			errs = append(errs, fmt.Errorf("headers_to_add[%d].%w", i, err))
			continue
		}
		t.headers = append(t.headers, h)
	}
	t.propagateHeaders = tc.GetPropagateResponseHeaders()
	t.propagateTrailers = tc.GetPropagateResponseTrailers()
	if err := t.compileRequestID(tc, reg); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return t, nil
}

// requestHeaders returns the tunnel request's hostname and headers for
// the connection described by e.
func (t *tunnel) requestHeaders(e *accesslog.Entry) (string, http.Header) {
	host := string(t.hostname.AppendValue(nil, e))
	hdr := http.Header{}
	tunnelhttp.Apply(t.headers, hdr, e)
	return host, hdr
}

// errTunnelRefused: the upstream proxy answered the tunnel request with
// a status other than success.
var errTunnelRefused = errors.New("tunnel refused")

// openTunnel connects to h and opens the tunnel: over HTTP/2 a CONNECT
// (or POST) stream whose bodies carry the bytes, over HTTP/1.1 a CONNECT
// after which the connection carries them. It returns what the pumps use.
func (s *session) openTunnel(cl netfilter.Cluster, h *upstream.Host) (upstreamIO, error) {
	t := s.p.cfg.tunnel
	host, hdr := t.requestHeaders(s.entry(0))
	if t.requestID {
		// After headers_to_add: the generated id is the one sent.
		id := newRequestID()
		hdr.Set(t.requestIDHeader, id)
		s.dynMeta = t.withRequestID(netfilter.DynamicMetadataOf(s.down), id)
	}
	if cl.HTTP2() {
		return s.openHTTP2Tunnel(cl, h, host, hdr)
	}
	if t.usePost {
		return upstreamIO{}, errors.New("tunneling_config.use_post needs an HTTP/2 cluster")
	}
	conn, err := cl.ConnectHost(s.upstreamContext(), h)
	if err != nil {
		return upstreamIO{}, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n", host, host)
	_ = hdr.Write(&b)
	b.WriteString("\r\n")
	// The answer comes within the connect timeout's order of time or
	// not at all; the idle timeout bounds it otherwise.
	if d := s.p.cfg.idleTimeout; d > 0 {
		_ = conn.SetDeadline(time.Now().Add(d))
	}
	if _, err := conn.Write(b.Bytes()); err != nil {
		_ = conn.Close()
		return upstreamIO{}, err
	}
	head := &io.LimitedReader{R: rawConn(conn), N: maxTunnelResponseHead}
	br := bufio.NewReaderSize(head, 4<<10)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	ub := upstreamBytesOf(conn)
	if err != nil || resp.StatusCode != http.StatusOK {
		// What was read of a refusal counts too.
		ub.read(int(maxTunnelResponseHead - head.N))
	}
	if err != nil {
		_ = conn.Close()
		return upstreamIO{}, fmt.Errorf("reading the tunnel's response: %w", err)
	}
	s.keepResponseHeaders(resp)
	if resp.StatusCode != http.StatusOK {
		_ = conn.Close()
		return upstreamIO{}, fmt.Errorf("%w: %s", errTunnelRefused, resp.Status)
	}
	_ = conn.SetDeadline(time.Time{})
	// Bytes the upstream sent right after its answer go first.
	early, _ := br.Peek(br.Buffered())
	var r io.Reader = rawConn(conn)
	if len(early) > 0 {
		r = io.MultiReader(bytes.NewReader(bytes.Clone(early)), r)
	}
	// The answer's head was read from the socket: it counts here, the
	// early bytes when the pump reads them.
	ub.read(int(maxTunnelResponseHead-head.N) - len(early))
	return upstreamIO{
		closer:     conn,
		r:          r,
		w:          rawConn(conn),
		closeWrite: func() error { return closeWrite(conn) },
		local:      accesslog.AddressString(conn.LocalAddr()),
		bytes:      ub,
	}, nil
}

// openHTTP2Tunnel opens a CONNECT (or POST) stream to h. The wait for
// the answer is bounded by the idle timeout, as the HTTP/1.1 tunnel's.
func (s *session) openHTTP2Tunnel(cl netfilter.Cluster, h *upstream.Host, host string, hdr http.Header) (upstreamIO, error) {
	t := s.p.cfg.tunnel
	req := &http.Request{
		Method: http.MethodConnect,
		URL:    &url.URL{Host: host},
		Host:   host,
		Header: hdr,
	}
	if t.usePost {
		req.Method = http.MethodPost
		req.URL = &url.URL{Path: t.postPath}
	}
	st, err := upstream.OpenH2Stream(s.upstreamContext(), cl, h, req, s.p.cfg.idleTimeout)
	if err != nil {
		return upstreamIO{}, err
	}
	s.keepResponseHeaders(st.Resp)
	ok := st.Resp.StatusCode == http.StatusOK
	if t.usePost {
		ok = st.Resp.StatusCode >= 200 && st.Resp.StatusCode < 300
	}
	if !ok {
		_ = st.Close()
		return upstreamIO{}, fmt.Errorf("%w: %s", errTunnelRefused, st.Resp.Status)
	}
	up := upstreamIO{closer: st, r: st, w: st, closeWrite: st.CloseWrite}
	if t.propagateTrailers {
		// Go's transport fills Trailer once the body has ended.
		up.trailer = func() http.Header { return st.Resp.Trailer }
	}
	return up, nil
}

// keepResponseHeaders keeps the tunnel response's headers in the
// connection's filter state with propagate_response_headers, whatever
// its status, as Envoy does (a refusal's headers are logged too).
func (s *session) keepResponseHeaders(resp *http.Response) {
	if s.p.cfg.tunnel.propagateHeaders {
		s.respHeaders = tunnelhttp.HeaderMapOf(resp.StatusCode, resp.Header)
	}
}

// keepResponseTrailers keeps the tunnel response's trailers once its
// body has ended, with propagate_response_trailers; only HTTP/2 tunnels
// have any.
func (s *session) keepResponseTrailers() {
	if s.up.trailer == nil {
		return
	}
	if tr := s.up.trailer(); len(tr) > 0 {
		s.respTrailers.Store(tunnelhttp.HeaderMapOf(0, tr))
	}
}
