package httpconn

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpconn/http1"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/listener"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// Request mirroring (the route's request_mirror_policies), as Envoy's
// router shadows requests with its default, buffering behaviour: each
// mirrored request is copied as it went upstream (headers after the
// route's edits, :authority with "-shadow"), its body is kept as it flows
// to the main upstream, and once the request has arrived whole the copies
// go to their clusters from goroutines of their own, bounded by the route
// timeout; their responses are read and dropped. Nothing of a shadow
// reaches the client or the main cluster's stats: the shadow clusters
// count them as their own requests.

// shadow is one copy of a request on its way to a shadow cluster. It holds
// no view of the stream's buffers: every string is its own.
type shadow struct {
	cl        UpstreamCluster
	method    string
	path      string
	authority string
	// scheme is the scheme of the absolute-form target the cluster asks
	// for (send_fully_qualified_url), empty without one.
	scheme  string
	headers headerList
	// http2: the copy goes over HTTP/2 (the cluster's choice for the
	// downstream's protocol); teTrailers says "te: trailers" then.
	http2, teTrailers bool
	// clientH2: the downstream spoke HTTP/2, which decides http2 again
	// for the cluster of the host an aggregate cluster picks.
	clientH2 bool
	// hasBody: the copy carries a body (possibly empty) with its
	// length.
	hasBody bool
	// trailer are the request's trailers, which an HTTP/2 copy ends
	// with (an HTTP/1.1 copy is sent with a content-length, which has no
	// place for them).
	trailer http.Header
	pick    upstream.PickContext
	// span is the copy's "mirror" span, a child of the request's; nil
	// when the request is not traced.
	span *tracing.Span
	// bodyLimit is the smallest limit of the upstream filters that
	// buffer the copy's body, -1 for none: a longer body is their 413,
	// and the copy is not sent. answered is the status an upstream
	// filter answered the copy with (0: none), which is then not sent.
	bodyLimit int
	answered  int
	// trailerDecs edit the copy's trailers, for its upstream filters.
	trailerDecs []httpfilter.TrailerDecoder
}

// startMirrors prepares the shadows of the request the route mirrors, on
// its way to cl: the copies go out once the request has arrived (at once
// for one without a body, else when its body ends). A route without
// request_mirror_policies costs one length check. CONNECT requests and
// upgrades are not mirrored, as in Envoy.
func (s *stream) startMirrors(cl UpstreamCluster) {
	if cp := s.clPolicies; cp != nil && len(cp.Mirrors) > 0 {
		s.startRouteMirrors(cl, cp.Mirrors)
	} else if len(s.route.Mirrors) > 0 {
		s.startRouteMirrors(cl, s.route.Mirrors)
	}
}

// startRouteMirrors starts the shadows of policies ps: the route's, or
// the cluster's that replace them.
func (s *stream) startRouteMirrors(cl UpstreamCluster, ps []*router.MirrorPolicy) {
	if s.upg.typ != "" || s.upg.connect || s.method == "CONNECT" || s.m.deps.Upstreams == nil {
		return
	}
	var shadows []*shadow
	for _, p := range ps {
		if !p.Mirrors(s.m.deps.Runtime, s.rreq.RandomValue()) {
			continue
		}
		name := p.ClusterFor(&s.reqHeaders)
		if name == "" {
			continue
		}
		scl := s.m.deps.Upstreams.Cluster(name)
		if scl == nil {
			// As Envoy's shadow writer: a shadow cluster that does
			// not exist (any more) is skipped, counted nowhere.
			continue
		}
		sh := s.newShadow(scl, p.ShadowAuthority(s.upAuthority))
		p.MutateHeaders(&sh.headers, &s.entry)
		if s.requestSpan() != nil {
			// As Envoy's asynchronous client: a child span named
			// "mirror", sampled as trace_sampled says, else as the
			// request.
			sh.span = s.span.Child("mirror", s.m.stamp(time.Now()))
			if p.TraceSampled != nil {
				sh.span.Sampled = *p.TraceSampled
			}
			sh.span.Inject(&sh.headers)
		}
		if c := s.upstreamChain(scl); c != nil && !s.decodeShadow(c, sh) {
			// As Envoy's router: the shadow runs the upstream chain
			// too, whose filters may answer it (it is not sent).
			s.m.finishShadowSpan(sh, nil, sh.answered)
			continue
		}
		shadows = append(shadows, sh)
	}
	if len(shadows) == 0 {
		return
	}
	timeout := s.rqTimeout
	if timeout <= 0 {
		// A route without a timeout: the shadows are still bounded,
		// by the stream idle timeout (see docs/compat.md).
		timeout = s.idleTimeout()
	}
	if s.body == nil {
		s.m.sendShadows(shadows, nil, timeout)
		return
	}
	s.body = &mirrorBody{
		src:     s.body,
		m:       s.m,
		shadows: shadows,
		timeout: timeout,
		limit:   s.bufferLimit(),
		main:    cl.Stats(),
		down:    s.down,
	}
}

// newShadow copies the request as it goes upstream for cl, with authority
// as its :authority, and adds the headers Envoy's asynchronous client
// adds to what it sends: x-envoy-internal and the proxy's address at the
// end of x-forwarded-for.
func (s *stream) newShadow(cl UpstreamCluster, authority string) *shadow {
	sh := &shadow{
		cl:         cl,
		method:     strings.Clone(s.method),
		path:       strings.Clone(s.upPath),
		authority:  strings.Clone(authority),
		scheme:     s.shadowScheme(cl.HTTP1Format()),
		http2:      cl.HTTP2For(s.proto == protoHTTP2),
		clientH2:   s.proto == protoHTTP2,
		teTrailers: s.teTrailers,
		hasBody:    s.body != nil || s.reqLength == 0,
		bodyLimit:  -1,
	}
	sh.headers.fields = make([]field, 0, len(s.reqHeaders.fields)+2)
	for _, f := range s.reqHeaders.fields {
		sh.headers.fields = append(sh.headers.fields, field{strings.Clone(f.name), strings.Clone(f.value)})
		sh.headers.adds++
	}
	sh.headers.Set("x-envoy-internal", "true")
	local := s.m.localIP.get()
	if xff, ok := sh.headers.Get("x-forwarded-for"); ok && xff != "" {
		sh.headers.Set("x-forwarded-for", xff+", "+local)
	} else {
		sh.headers.Set("x-forwarded-for", local)
	}
	sh.pick = upstream.PickContext{OriginalDst: s.origDst, Headers: &sh.headers}
	return sh
}

// DelMatching removes the fields whose name match accepts, keeping the
// order of the others (a mirror policy's remove_on_match).
func (h *headerList) DelMatching(match func(name string) bool) {
	h.fields = slices.DeleteFunc(h.fields, func(f field) bool { return match(f.name) })
	h.edits++
}

// bufferLimit is how much of a request body the stream keeps for its
// retries and shadows: the connection's buffer limit (the listener's
// per_connection_buffer_limit_bytes) as the route's
// request_body_buffer_limit or per_request_buffer_limit_bytes adjust it,
// as Envoy's router bounds its retry and shadow buffer.
func (s *stream) bufferLimit() int {
	conn := listener.DefaultBufferLimit
	if st, ok := s.down.(*h2Stream); ok {
		conn = st.h.highWater
	} else if s.conn != nil {
		conn = connBufferLimit(s.conn.nc)
	}
	if s.route != nil {
		return s.route.BodyBufferLimit(conn)
	}
	return conn
}

// mirrorBody passes the request body on to the main upstream and keeps a
// copy for the shadows, which it sends when the body ends. A body above
// the buffer limit abandons them (retry_or_shadow_abandoned on the main
// cluster) and is no longer copied.
type mirrorBody struct {
	src     bodySource
	m       *Manager
	shadows []*shadow
	timeout time.Duration
	limit   int
	main    *upstream.ClusterStats
	buf     []byte
	// down gives the request's trailers once the body has ended.
	down downstream
}

// Next returns the next piece of the body, copying it for the shadows.
func (b *mirrorBody) Next() ([]byte, error) {
	p, err := b.src.Next()
	if b.shadows == nil {
		return p, err
	}
	if len(b.buf)+len(p) > b.limit {
		b.main.RetryOrShadowAbandoned().Inc()
		b.shadows, b.buf = nil, nil
		return p, err
	}
	b.buf = append(b.buf, p...)
	if errors.Is(err, io.EOF) {
		shadows, body := b.shadows, b.buf
		b.shadows, b.buf = nil, nil
		t := b.down.requestTrailers()
		for _, sh := range shadows {
			if len(t) > 0 {
				sh.trailer = t.Clone()
			}
			for _, td := range sh.trailerDecs {
				sh.trailer = td.DecodeTrailers(sh.trailer)
			}
		}
		b.m.sendShadows(shadows, body, b.timeout)
	}
	return p, err
}

// sendShadows sends each shadow with body from a goroutine of its own,
// bounded by timeout (0: the manager's life).
func (m *Manager) sendShadows(shadows []*shadow, body []byte, timeout time.Duration) {
	for _, sh := range shadows {
		if sh.bodyLimit >= 0 && len(body) > sh.bodyLimit {
			// Its upstream filters' 413: it goes nowhere.
			m.finishShadowSpan(sh, nil, 413)
			continue
		}
		go m.sendShadow(sh, body, timeout)
	}
}

// sendShadow sends one shadow and reads its response to the end, counting
// it in the shadow cluster's stats as the router counts a request.
func (m *Manager) sendShadow(sh *shadow, body []byte, timeout time.Duration) {
	cl := sh.cl
	cs := cl.Stats()
	host := cl.PickHost(&sh.pick)
	if host == nil {
		m.chargeShadow(cs, 503)
		m.finishShadowSpan(sh, nil, 503)
		return
	}
	if hc, ok := cl.(hostCluster); ok {
		// An aggregate cluster: the host's cluster carries the copy,
		// with its protocol.
		cl = hc.ForHost(host)
		sh.cl, sh.http2 = cl, cl.HTTP2For(sh.clientH2)
	}
	ctx := m.ctx
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	cs.UpstreamRqTotal.Inc()
	cs.UpstreamRqActive.Inc()
	host.Stats.RqTotal.Add(1)
	host.Stats.RqActive.Add(1)
	start := time.Now()
	var (
		status int
		err    error
	)
	if sh.http2 {
		status, err = sh.exchangeHTTP2(ctx, host, body)
	} else {
		status, err = sh.exchangeHTTP1(ctx, host, body, deadline, m.cfg.maxHeadersCount)
	}
	switch {
	case err == nil:
		m.chargeShadow(cs, status)
		if !m.filters.noDynamicStats {
			cs.UpstreamRqTime.Record(uint64(time.Since(start).Milliseconds()))
		}
	case !deadline.IsZero() && !time.Now().Before(deadline) && (isTimeoutErr(err) || errors.Is(err, context.DeadlineExceeded)):
		status = 504
		cs.UpstreamRqTimeout().Inc()
		host.Stats.RqTimeout.Add(1)
		m.chargeShadow(cs, status)
	case errors.As(err, new(*http1.Error)):
		status = 502
		m.chargeShadow(cs, status)
	default:
		// Connection failures and resets, overflows included; the
		// pool counted its own side.
		status = 503
		m.chargeShadow(cs, status)
	}
	m.finishShadowSpan(sh, host, status)
	cs.UpstreamRqActive.Dec()
	cs.UpstreamRqCompleted.Inc()
	host.Stats.RqActive.Add(-1)
	if status >= 500 {
		host.Stats.RqError.Add(1)
	} else {
		host.Stats.RqSuccess.Add(1)
	}
}

// finishShadowSpan ends a shadow's span, if it has one, with the tags
// Envoy's upstream spans carry; host is nil when none was chosen.
func (m *Manager) finishShadowSpan(sh *shadow, host *upstream.Host, status int) {
	sp := sh.span
	if sp == nil {
		return
	}
	sh.span = nil
	if sp.Sampled {
		sp.SetTag("component", "proxy")
		sp.SetTag("upstream_cluster", sh.cl.Name())
		sp.SetTag("upstream_cluster.name", sh.cl.Name())
		proto := protoHTTP11
		if sh.http2 {
			proto = protoHTTP2
		}
		sp.SetTag("http.protocol", proto)
		if host != nil {
			sp.SetTag("upstream_address", host.Address)
			sp.SetTag("peer.address", host.Address)
		}
		sp.SetTag("http.method", sh.method)
		sp.SetTag("http.status_code", strconv.Itoa(status))
		if status >= 500 {
			sp.SetTag("error", "true")
		}
	}
	sp.Finish(m.stamp(time.Now()))
}

// chargeShadow counts a shadow's response code, unless the router's
// dynamic_stats is off.
func (m *Manager) chargeShadow(cs *upstream.ClusterStats, code int) {
	if !m.filters.noDynamicStats {
		cs.RecordResponse(code)
	}
}

// exchangeHTTP1 sends the shadow over a pooled HTTP/1.1 connection and
// reads the response to its end, returning its status.
func (sh *shadow) exchangeHTTP1(ctx context.Context, host *upstream.Host, body []byte, deadline time.Time, maxHeaders int) (int, error) {
	if a := sh.cl.AutoSNI(); a != nil {
		// Envoy's shadows go through a router of their own, which
		// derives the handshake from the shadow's headers.
		ctx = autoSNIContext(ctx, a, sh.authority, &sh.headers)
	}
	// A shadow is of the DEFAULT priority, from no particular source.
	uc, err := sh.cl.AcquireHTTP1For(ctx, host, upstream.Acquire{Deadline: deadline})
	if err != nil {
		return 0, err
	}
	reusable := false
	defer func() { sh.cl.ReleaseHTTP1(uc, reusable) }()
	// A pooled connection keeps its last request's deadline: this
	// exchange sets its own, none when it has none.
	_ = uc.SetDeadline(deadline)
	if deadline.IsZero() {
		// Shutdown of the manager ends the exchange.
		stop := context.AfterFunc(ctx, func() { _ = uc.SetDeadline(time.Now()) })
		defer stop()
	}
	if _, err := uc.Write(sh.appendHead(nil, len(body), sh.cl.HTTP1Format())); err != nil {
		return 0, err
	}
	if len(body) > 0 {
		if _, err := uc.Write(body); err != nil {
			return 0, err
		}
	}
	var resp http1.Response
	kind, err := readShadowHead(uc.R, &resp, sh.cl.MaxResponseHeadBytes(), maxHeaders, sh.method == "HEAD")
	noteHTTP1Head(sh.cl.Stats(), &resp, err)
	if err != nil {
		return 0, err
	}
	var br http1.BodyReader
	br.Reset(uc.R, kind, resp.ContentLength, maxTrailerBytes, nil)
	for {
		_, err := br.Next()
		if errors.Is(err, io.EOF) {
			uc.Answered = true
			break
		}
		if err != nil {
			noteHTTP1Error(sh.cl.Stats(), err)
			return 0, err
		}
	}
	reusable = resp.Reusable(kind)
	return resp.Status, nil
}

// readShadowHead reads a shadow's final response head, skipping interim
// responses.
func readShadowHead(r *bufio.Reader, resp *http1.Response, maxHead, maxHeaders int, isHead bool) (http1.BodyKind, error) {
	for {
		head, err := http1.ReadHead(r, nil, maxHead)
		if err != nil {
			return 0, err
		}
		if err := http1.ParseResponse(head, resp, maxHeaders); err != nil {
			return 0, err
		}
		switch {
		case resp.Status == 101:
			return 0, http1.ErrStatusCode
		case resp.Status < 200:
			continue
		}
		return resp.BodyKind(isHead), nil
	}
}

// appendHead serialises the shadow's request head in the cluster's format
// f, with a Content-Length of n when it has a body.
func (sh *shadow) appendHead(b []byte, n int, f *upstream.HTTP1Format) []byte {
	b = append(b, sh.method...)
	b = append(b, ' ')
	if f.FullyQualifiedURL && sh.authority != "" {
		b = appendAbsoluteTarget(b, sh.scheme, sh.authority, sh.path)
	} else {
		b = append(b, sh.path...)
	}
	b = append(b, " HTTP/1.1\r\n"...)
	if sh.authority != "" {
		b = http1.AppendHeaderString(b, "host", sh.authority)
	}
	for _, f := range sh.headers.fields {
		b = http1.AppendHeaderString(b, f.name, f.value)
	}
	if sh.hasBody || n > 0 {
		b = http1.AppendContentLength(b, int64(n))
	}
	b = append(b, http1.CRLF...)
	if f.ProperCase {
		http1.ProperCaseNames(b)
	}
	return b
}

// exchangeHTTP2 sends the shadow over the cluster's HTTP/2 pool and reads
// the response to its end, returning its status.
func (sh *shadow) exchangeHTTP2(ctx context.Context, host *upstream.Host, body []byte) (int, error) {
	// Values are copied: Go's client may keep them in its HPACK table
	// for the connection's life, and the span's context is a view of
	// the span's scratch, reused once the span is done.
	h := make(http.Header, len(sh.headers.fields)+1)
	for _, f := range sh.headers.fields {
		k := http.CanonicalHeaderKey(f.name)
		h[k] = append(h[k], strings.Clone(f.value))
	}
	if sh.teTrailers {
		h["Te"] = []string{"trailers"}
	}
	req := &http.Request{
		Method:     sh.method,
		URL:        sh.url(),
		Host:       sh.authority,
		Header:     h,
		Proto:      "HTTP/2.0",
		ProtoMajor: 2,
	}
	if len(body) > 0 || sh.hasBody {
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		if len(sh.trailer) > 0 {
			req.Trailer = sh.trailer
		}
	}
	if a := sh.cl.AutoSNI(); a != nil {
		ctx = autoSNIContext(ctx, a, sh.authority, &sh.headers)
	}
	resp, err := sh.cl.RoundTripHTTP2(req.WithContext(ctx), host)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, err
	}
	return resp.StatusCode, nil
}

// url is the shadow's path for Go's HTTP/2 client.
func (sh *shadow) url() *url.URL { return pathURL(sh.path) }

// pathURL is a request path for Go's HTTP/2 client, passed on as it is
// (opaque) when Go's parser disagrees with ours.
func pathURL(path string) *url.URL {
	u, err := url.ParseRequestURI(path)
	if err != nil {
		return &url.URL{Opaque: path}
	}
	return u
}

// localIP is the address the proxy adds to a shadow's x-forwarded-for, as
// Envoy adds its node's address: the first non-loopback IP address of the
// machine's interfaces (IPv4 first), else the loopback one; looked up
// once.
type localIP struct {
	once sync.Once
	ip   string
}

// get returns the address, looking it up on first use.
func (l *localIP) get() string {
	l.once.Do(func() {
		l.ip = "127.0.0.1"
		addrs, err := net.InterfaceAddrs()
		if err != nil {
			return
		}
		var v6 string
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok || ipn.IP.IsLoopback() || ipn.IP.IsLinkLocalUnicast() {
				continue
			}
			if ipn.IP.To4() != nil {
				l.ip = ipn.IP.String()
				return
			}
			if v6 == "" {
				v6 = ipn.IP.String()
			}
		}
		if v6 != "" {
			l.ip = v6
		}
	})
	return l.ip
}
