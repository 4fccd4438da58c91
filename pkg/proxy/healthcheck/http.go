package healthcheck

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
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
func (c *Checker) newProber(addr string, h *upstream.Host) prober {
	switch c.cfg.Kind {
	case KindTCP:
		return &tcpProber{c: c, addr: addr, host: h}
	case KindGRPC:
		return &grpcProber{c: c, addr: addr, host: h, authority: checkHostname(h, c.cfg.grpc.authority), entry: c.headerEntry(h)}
	}
	if !c.cfg.http.http2 {
		return c.newHTTP1Prober(addr, h)
	}
	return c.newHTTP2Prober(addr, h)
}

// checkHostname is the Host or :authority of h's checks: its
// health_check_config hostname, else configured (the check's host or
// authority, which defaults to the cluster's name), as Envoy chooses.
func checkHostname(h *upstream.Host, configured string) string {
	if h.HealthCheck != nil && h.HealthCheck.Hostname != "" {
		return h.HealthCheck.Hostname
	}
	return configured
}

// httpProber sends HTTP/2 checks to one host over its own connection
// (one stream at a time; kept between checks with reuse_connection).
type httpProber struct {
	c      *Checker
	url    string
	host   string
	client *http.Client
	closer interface{ CloseIdleConnections() }
	entry  *accesslog.Entry
}

// newHTTP2Prober builds the HTTP/2 prober of one host: :scheme is https
// on a TLS cluster.
func (c *Checker) newHTTP2Prober(addr string, h *upstream.Host) *httpProber {
	hc := c.cfg.http
	p := &httpProber{c: c, host: checkHostname(h, hc.host), entry: c.headerEntry(h)}
	scheme := "http"
	tls := c.env.TLS != nil && c.env.TLS(h)
	if tls {
		scheme = "https"
	}
	alpn := alpnHTTP2
	if len(c.cfg.ALPN) > 0 {
		alpn = c.cfg.ALPN
	}
	p.url = scheme + "://" + addr + hc.path
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) { return c.env.Dial(ctx, h, addr, alpn) }
	t := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 1, MaxConnsPerHost: 1, Protocols: new(http.Protocols)}
	if tls {
		// The dialer's TLS offered h2 by ALPN.
		t.Protocols.SetHTTP2(true)
		t.DialTLSContext = dial
	} else {
		t.Protocols.SetUnencryptedHTTP2(true)
		t.DialContext = dial
	}
	p.closer = t
	p.client = &http.Client{
		Transport: t,
		// A check follows no redirect: the status is the answer.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return p
}

// probe sends one HTTP/2 check.
func (p *httpProber) probe(ctx context.Context, deadline time.Time) result {
	hc := p.c.cfg.http
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
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
	hc.headers.Apply(headerEditor(req.Header), p.entry)
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
	defer resp.Body.Close()
	got, complete := readBody(p.c, resp.Body)
	head := respHead{status: resp.StatusCode}
	_, head.degraded = resp.Header[http.CanonicalHeaderKey(headerDegraded)]
	_, head.immediate = resp.Header[http.CanonicalHeaderKey(headerImmediateFail)]
	head.checkedAs = resp.Header.Get(headerCheckedAs)
	r := judge(p.c, head, got)
	if !complete || !p.c.cfg.ReuseConnection {
		// A body too long to read to its end takes its connection.
		p.closer.CloseIdleConnections()
	}
	return r
}

// headerEntry is what the % operators of request_headers_to_add read,
// as Envoy's check stream info holds it: the host, its cluster and
// metadata, and 127.0.0.1 as the downstream addresses.
func (c *Checker) headerEntry(h *upstream.Host) *accesslog.Entry {
	return &accesslog.Entry{
		UpstreamHost:            h.Address,
		UpstreamCluster:         c.env.Cluster,
		UpstreamHostMetadata:    h.Metadata,
		DownstreamRemoteAddress: "127.0.0.1:0",
		DownstreamLocalAddress:  "127.0.0.1:0",
		HealthCheck:             true,
	}
}

// judge judges an answer as Envoy does: the receive payloads first (got
// is the body read for them), then the status (expected, retriable, or a
// failure, with x-envoy-immediate-health-check-fail noted), then the
// service name matcher; x-envoy-degraded makes a success degraded.
func judge(c *Checker, h respHead, got []byte) result {
	hc := c.cfg.http
	if len(hc.receive) > 0 && !matchSegments(hc.receive, got) {
		return result{outcome: outcomeFailed, status: h.status, immediateFail: h.immediate}
	}
	if !inRanges(h.status, hc.expected) {
		o := outcomeFailed
		if inRanges(h.status, hc.retriable) {
			o = outcomeRetriable
		}
		return result{outcome: o, status: h.status, immediateFail: h.immediate}
	}
	o := outcomeSuccess
	if h.degraded {
		o = outcomeDegraded
	}
	if hc.serviceMatch != nil && c.verifyCluster() {
		c.stats.verifyCluster.Inc()
		if !hc.serviceMatch.Match(h.checkedAs) {
			return result{outcome: outcomeFailed, status: h.status}
		}
	}
	return result{outcome: o, status: h.status}
}

func (p *httpProber) close() { p.closer.CloseIdleConnections() }

// verifyCluster is Envoy's featureEnabled("health_check.verify_cluster",
// 100): on unless the runtime says otherwise.
func (c *Checker) verifyCluster() bool {
	if c.env.Runtime == nil {
		return true
	}
	snap := c.env.Runtime()
	if snap == nil {
		return true
	}
	var random uint64
	if c.env.Rand != nil {
		random = c.env.Rand()
	}
	return runtime.Fraction{Key: "health_check.verify_cluster", Numerator: 100, Denominator: 100}.Enabled(snap, random)
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
