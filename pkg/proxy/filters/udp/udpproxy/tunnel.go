package udpproxy

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	datav3 "github.com/envoyproxy/go-control-plane/envoy/data/accesslog/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tunnelhttp"
	"github.com/outrigger-dev/outrigger/pkg/proxy/udpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// tunnelCluster is what a tunnel needs of its cluster: its HTTP/2 pool.
// The server's clusters have it.
type tunnelCluster = udpfilter.TunnelCluster

// connectedWindow bounds what a connected tunnel holds for the HTTP/2
// stream that has not taken it yet, standing for Envoy's connection
// write buffer watermark: past it, datagrams are dropped (or counted in
// sess_tunnel_buffer_overflow with buffer_options).
const (
	connectedWindowDatagrams = 1024
	connectedWindowBytes     = 1 << 20
)

// upstreamReadSize is the size of one read of the tunnel's response
// body: each read passes up the session filters as one datagram of the
// host, as each of Envoy's DATA decodes does.
const upstreamReadSize = 16 << 10

// tunnel is one session's HTTP/2 stream to the upstream proxy. Datagrams
// go to a queue that one writer goroutine empties into the stream once it
// is open; before that, the queue holds them within buffer_options (none
// without).
type tunnel struct {
	s      *session
	cl     tunnelCluster
	cfg    *tunnelConfig
	ctx    context.Context
	cancel context.CancelFunc

	mu sync.Mutex
	// st is the open stream, nil before (and after a failure).
	st *upstream.H2Stream
	// queue and queued are the datagrams waiting for the stream and
	// their bytes; wake tells the writer there are some.
	queue  [][]byte
	queued uint64
	wake   chan struct{}
	// host is the host whose stream opened (or the last one tried).
	host *upstream.Host
	// attempts counts the connection attempts made.
	attempts uint32
	// respHeaders and respTrailers are kept with
	// propagate_response_headers and _trailers.
	respHeaders  *corev3.HeaderMap
	respTrailers atomic.Pointer[corev3.HeaderMap]
}

// newTunnel makes a session's tunnel; run opens it, counted in the
// proxy's readers.
func newTunnel(s *session, cl tunnelCluster) *tunnel {
	ctx, cancel := context.WithCancel(context.Background())
	return &tunnel{s: s, cl: cl, cfg: s.p.cfg.tunnel, ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1)}
}

// send queues one datagram (already through the session filters) for
// the stream: kept within buffer_options while the stream is not open
// (dropped without them), within the connected window once it is.
func (t *tunnel) send(b []byte) {
	t.mu.Lock()
	maxN, maxB := t.cfg.maxDatagrams, t.cfg.maxBytes
	if t.st != nil {
		maxN, maxB = connectedWindowDatagrams, connectedWindowBytes
	} else if !t.cfg.buffer {
		t.mu.Unlock()
		return
	}
	if len(t.queue) >= maxN || t.queued+uint64(len(b)) > maxB {
		t.mu.Unlock()
		if t.cfg.buffer {
			t.s.cs.tunnelBufferOverflow.Inc()
		}
		return
	}
	t.queue = append(t.queue, append([]byte(nil), b...))
	t.queued += uint64(len(b))
	t.mu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// run opens the stream, with the retries retry_options allow, then moves
// datagrams both ways until the session ends. A tunnel that cannot open
// ends its session (sess_tunnel_failure), as does the end of its stream.
func (t *tunnel) run() {
	defer t.s.p.readers.Done()
	st, ok := t.open()
	if !ok {
		t.s.p.remove(t.s)
		return
	}
	t.mu.Lock()
	t.st = st
	t.mu.Unlock()
	t.s.cs.tunnelSuccess.Inc()
	t.s.touch()
	if t.s.p.cfg.flushOnTunnelConnected {
		t.s.logEntry(datav3.AccessLogType_UdpTunnelUpstreamConnected)
	}
	go t.write(st)
	t.read(st)
	t.s.p.remove(t.s)
}

// open makes the connection attempts: each picks a host and sends the
// tunnel request; a 200 (any 2xx with use_post) opens the tunnel.
func (t *tunnel) open() (*upstream.H2Stream, bool) {
	s := t.s
	for {
		if t.ctx.Err() != nil {
			return nil, false
		}
		if t.attempts >= t.cfg.maxAttempts {
			s.cs.attemptsExceeded.Inc()
			s.cs.tunnelFailure.Inc()
			return nil, false
		}
		if t.attempts > 0 {
			s.cs.rqRetry.Inc()
			if t.cfg.backoffBase > 0 && !t.backoff() {
				return nil, false
			}
		}
		h := t.cl.PickHost(s.p.pickContext(s.key.peer))
		if h == nil {
			// As Envoy: no pool without a host, the session fails.
			s.cs.tunnelFailure.Inc()
			return nil, false
		}
		t.mu.Lock()
		t.attempts++
		t.host = h
		t.mu.Unlock()
		st, err := t.attempt(h)
		if err == nil {
			return st, true
		}
		s.p.log.V(1).Info("udp proxy: tunnel attempt failed", "host", h.Address, "error", err.Error())
	}
}

// attempt sends the tunnel request to h and checks its answer.
func (t *tunnel) attempt(h *upstream.Host) (*upstream.H2Stream, error) {
	if !t.cl.HTTP2() {
		return nil, errors.New("the cluster does not speak HTTP/2")
	}
	e := t.s.entry(datav3.AccessLogType_NotSet)
	authority := t.cfg.authority(e)
	req := &http.Request{Host: authority, Header: http.Header{}}
	if t.cfg.usePost {
		req.Method = http.MethodPost
		req.URL = &url.URL{Path: t.cfg.postPath}
	} else {
		// RFC 9298 over HTTP/2: an extended CONNECT (RFC 8441).
		req.Method = http.MethodConnect
		req.URL = &url.URL{Path: t.cfg.path(e)}
		req.Header[":protocol"] = []string{"connect-udp"}
		req.Header["Capsule-Protocol"] = []string{"?1"}
	}
	t.cfg.header(req.Header, e)
	st, err := upstream.OpenH2Stream(t.ctx, t.cl, h, req, 0)
	if err != nil {
		return nil, err
	}
	if t.cfg.propagateHeaders {
		hm := tunnelhttp.HeaderMapOf(st.Resp.StatusCode, st.Resp.Header)
		t.mu.Lock()
		t.respHeaders = hm
		t.mu.Unlock()
	}
	ok := st.Resp.StatusCode == http.StatusOK
	if t.cfg.usePost {
		ok = st.Resp.StatusCode >= 200 && st.Resp.StatusCode < 300
	}
	if !ok {
		_ = st.Close()
		return nil, fmt.Errorf("tunnel refused: %s", st.Resp.Status)
	}
	return st, nil
}

// backoff waits before a retry as Envoy's jittered exponential backoff
// does: a random time below base*2^(retries-1), capped at max_interval.
// It reports false when the session ended meanwhile.
func (t *tunnel) backoff() bool {
	limit := t.cfg.backoffBase
	for i := uint32(1); i < t.attempts && limit < t.cfg.backoffMax; i++ {
		limit *= 2
	}
	limit = min(limit, t.cfg.backoffMax)
	timer := time.NewTimer(time.Duration(rand.Int64N(int64(limit)) + 1))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-t.ctx.Done():
		return false
	}
}

// write empties the queue into the stream until the session ends.
func (t *tunnel) write(st *upstream.H2Stream) {
	for {
		t.mu.Lock()
		q := t.queue
		t.queue, t.queued = nil, 0
		t.mu.Unlock()
		for _, d := range q {
			// As Envoy's, a tunnel's datagrams are not counted in
			// udp.sess_tx_*: its connection counts its bytes.
			if _, err := st.Write(d); err != nil {
				return
			}
		}
		select {
		case <-t.wake:
		case <-t.ctx.Done():
			return
		}
	}
}

// read passes the response body to the client, each read as one
// datagram of the host through the session filters, until the stream
// ends.
func (t *tunnel) read(st *upstream.H2Stream) {
	s := t.s
	buf := make([]byte, upstreamReadSize)
	for {
		n, err := st.Read(buf)
		if n > 0 {
			s.cs.rxDatagrams.Inc()
			s.touch()
			if s.filters == nil {
				s.toDownstream(buf[:n])
			} else {
				for _, d := range s.filterUp(buf[:n]) {
					s.toDownstream(d)
				}
			}
		}
		if err != nil {
			if t.cfg.propagateTrailers && len(st.Resp.Trailer) > 0 {
				t.respTrailers.Store(tunnelhttp.HeaderMapOf(0, st.Resp.Trailer))
			}
			return
		}
	}
}

// close ends the tunnel: the stream is reset if still open, an attempt
// under way is abandoned.
func (t *tunnel) close() {
	t.cancel()
	t.mu.Lock()
	st := t.st
	t.mu.Unlock()
	if st != nil {
		_ = st.Close()
	}
}

// logHost is the host the tunnel's stream went to, nil before one was
// tried.
func (t *tunnel) logHost() *upstream.Host {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.host
}

// attemptCount is the number of connection attempts made so far
// (%UPSTREAM_REQUEST_ATTEMPT_COUNT%).
func (t *tunnel) attemptCount() uint32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.attempts
}
