package healthcheck

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"

	"golang.org/x/net/http2"
)

// userAgent is the User-Agent of HTTP and gRPC checks: Envoy's, which
// upstream services match to tell checks from traffic.
const userAgent = "Envoy/HC"

// The response headers an HTTP check reads.
const (
	headerDegraded      = "x-envoy-degraded"
	headerImmediateFail = "x-envoy-immediate-health-check-fail"
	headerCheckedAs     = "x-envoy-upstream-healthchecked-cluster"
)

// drainLimit bounds how much of a body a check reads to keep its
// connection for the next check; a longer body closes the connection.
const drainLimit = 64 << 10

// ALPN protocol names.
var (
	alpnHTTP1 = []string{"http/1.1"}
	alpnHTTP2 = []string{"h2"}
)

// newProber builds the prober of one host's session.
func (c *Checker) newProber(addr string) prober {
	switch c.cfg.Kind {
	case KindTCP:
		return &tcpProber{c: c, addr: addr}
	case KindGRPC:
		return &grpcProber{c: c, addr: addr}
	}
	return c.newHTTPProber(addr)
}

// httpProber sends HTTP checks to one host over its own connection (one
// at a time; kept between checks with reuse_connection).
type httpProber struct {
	c      *Checker
	url    string
	host   string
	client *http.Client
	closer interface{ CloseIdleConnections() }
}

func (c *Checker) newHTTPProber(addr string) *httpProber {
	hc := c.cfg.http
	p := &httpProber{c: c, host: hc.host}
	scheme := "http"
	alpn := alpnHTTP1
	if hc.http2 {
		alpn = alpnHTTP2
		if c.env.TLS {
			scheme = "https"
		}
	}
	if len(c.cfg.ALPN) > 0 {
		alpn = c.cfg.ALPN
	}
	dial := func(ctx context.Context) (net.Conn, error) { return c.env.Dial(ctx, addr, alpn) }
	p.url = scheme + "://" + addr + hc.path
	var rt http.RoundTripper
	if hc.http2 {
		t := &http2.Transport{
			AllowHTTP:          true,
			DisableCompression: true,
			DialTLSContext: func(ctx context.Context, _, _ string, _ *tls.Config) (net.Conn, error) {
				return dial(ctx)
			},
		}
		rt, p.closer = t, t
	} else {
		t := &http.Transport{
			DialContext:         func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx) },
			DisableKeepAlives:   !c.cfg.ReuseConnection,
			DisableCompression:  true,
			MaxIdleConnsPerHost: 1,
			MaxConnsPerHost:     1,
			// The headers Envoy reads are the whole answer: a body is
			// read only for the receive payloads.
			MaxResponseHeaderBytes: 80 << 10,
		}
		rt, p.closer = t, t
	}
	p.client = &http.Client{
		Transport: rt,
		// A check follows no redirect: the status is the answer.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return p
}

// probe sends one check and judges the answer as Envoy does: the receive
// payloads first, then the status (expected, retriable, or a failure,
// with x-envoy-immediate-health-check-fail noted), then the service name
// matcher; x-envoy-degraded makes a success degraded.
func (p *httpProber) probe(ctx context.Context) result {
	hc := p.c.cfg.http
	var body io.Reader
	if len(hc.send) > 0 {
		body = bytes.NewReader(hc.send)
	}
	req, err := http.NewRequestWithContext(ctx, hc.method, p.url, body)
	if err != nil {
		return result{outcome: outcomeNetwork}
	}
	req.Host = p.host
	req.Header.Set("User-Agent", userAgent)
	hc.headers.Apply(headerEditor(req.Header), nil)
	if h := req.Header.Get("Host"); h != "" {
		req.Host = h
		req.Header.Del("Host")
	}
	resp, err := p.client.Do(req)
	if err != nil {
		if !p.c.cfg.ReuseConnection {
			p.closer.CloseIdleConnections()
		}
		return result{outcome: outcomeNetwork}
	}
	r := p.judge(resp)
	if !p.c.cfg.ReuseConnection {
		p.closer.CloseIdleConnections()
	}
	return r
}

// judge reads the answer and closes its body.
func (p *httpProber) judge(resp *http.Response) result {
	hc := p.c.cfg.http
	defer resp.Body.Close()
	var got []byte
	if len(hc.receive) > 0 {
		limit := int64(hc.bufferSize)
		if limit == 0 {
			limit = drainLimit
		}
		got, _ = io.ReadAll(io.LimitReader(resp.Body, limit))
	}
	if n, _ := io.Copy(io.Discard, io.LimitReader(resp.Body, drainLimit)); n >= drainLimit {
		// Too long to read to its end: the connection goes with the body.
		p.closer.CloseIdleConnections()
	}
	status := resp.StatusCode
	immediate := resp.Header.Get(headerImmediateFail) != ""
	if _, ok := resp.Header[http.CanonicalHeaderKey(headerImmediateFail)]; ok {
		immediate = true
	}
	if len(hc.receive) > 0 && !matchSegments(hc.receive, got) {
		return result{outcome: outcomeFailed, status: status, immediateFail: immediate}
	}
	if !inRanges(status, hc.expected) {
		o := outcomeFailed
		if inRanges(status, hc.retriable) {
			o = outcomeRetriable
		}
		return result{outcome: o, status: status, immediateFail: immediate}
	}
	o := outcomeSuccess
	if _, ok := resp.Header[http.CanonicalHeaderKey(headerDegraded)]; ok {
		o = outcomeDegraded
	}
	if hc.serviceMatch != nil && p.c.verifyCluster() {
		p.c.stats.verifyCluster.Inc()
		if !hc.serviceMatch.Match(resp.Header.Get(headerCheckedAs)) {
			return result{outcome: outcomeFailed, status: status}
		}
	}
	return result{outcome: o, status: status}
}

func (p *httpProber) close() { p.closer.CloseIdleConnections() }

// verifyCluster reads the runtime feature health_check.verify_cluster
// (on unless the runtime says otherwise).
func (c *Checker) verifyCluster() bool {
	if c.env.Runtime == nil {
		return true
	}
	snap := c.env.Runtime()
	if snap == nil {
		return true
	}
	if num, den, ok := snap.Fraction("health_check.verify_cluster"); ok {
		return den > 0 && (num >= den || (c.env.Rand != nil && c.env.Rand()%den < num))
	}
	return true
}

// inRanges reports whether status is in one of the ranges.
func inRanges(status int, rs []statusRange) bool {
	for _, r := range rs {
		if int64(status) >= r.start && int64(status) < r.end {
			return true
		}
	}
	return false
}

// matchSegments reports whether the segments occur in buf in order, each
// after the end of the previous one, as Envoy's payload matcher.
func matchSegments(segs [][]byte, buf []byte) bool {
	for _, s := range segs {
		i := bytes.Index(buf, s)
		if i < 0 {
			return false
		}
		buf = buf[i+len(s):]
	}
	return true
}

// headerEditor edits an http.Header with the router's lower-case names.
type headerEditor http.Header

func (h headerEditor) Get(name string) (string, bool) {
	vs, ok := http.Header(h)[http.CanonicalHeaderKey(name)]
	if !ok {
		return "", false
	}
	return strings.Join(vs, ","), true
}
func (h headerEditor) Set(name, value string) { http.Header(h).Set(name, value) }
func (h headerEditor) Add(name, value string) { http.Header(h).Add(name, value) }
func (h headerEditor) Del(name string)        { http.Header(h).Del(name) }
