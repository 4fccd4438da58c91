package tcpproxy

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	datav3 "github.com/envoyproxy/go-control-plane/envoy/data/accesslog/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filterstate"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// pickContext is the downstream side a cluster's load balancer may read:
// the connection's original destination, when a listener restored it, the
// hash_policy's hash key, its server name and dynamic port, and the
// metadata_match criteria that choose a subset.
func (s *session) pickContext() *upstream.PickContext {
	pc := &upstream.PickContext{MetadataMatch: s.metadataMatch}
	if dst, ok := upstream.OriginalDst(s.down); ok {
		pc.OriginalDst = dst
	}
	pc.Hasher = s
	// What a dynamic forward proxy cluster picks its host by.
	pc.ServerName = accesslog.RequestedServerName(s.down)
	if v, ok := netfilter.FilterStateOf(s.down, netfilter.DynamicPortStateKey); ok {
		if p, ok := v.(filterstate.UInt32); ok {
			pc.DynamicPort = uint32(p)
		}
	}
	if fs, ok := s.down.(netfilter.FilterStater); ok {
		pc.FilterState = fs
	}
	return pc
}

// upstreamContext is the context of the session's upstream connection
// attempts: the proxy's, carrying the source a listener filter
// (original_src) chose for the connection's upstream side, and the
// downstream's side for a cluster's upstream PROXY protocol header: what
// the downstream's own PROXY header said, else its addresses (Envoy's
// tcp_proxy always provides them), with proxy_protocol_tlvs merged in.
func (s *session) upstreamContext() context.Context {
	ctx := s.p.ctx
	if src, ok := upstream.SourceOf(s.down); ok {
		ctx = upstream.WithSource(ctx, src)
	}
	existing, has := upstream.ProxyProtocolOf(s.down)
	remote, rok := s.down.RemoteAddr().(*net.TCPAddr)
	local, lok := s.down.LocalAddr().(*net.TCPAddr)
	if !has && (!rok || !lok) {
		return ctx
	}
	if !has {
		existing = upstream.ProxyProtocolData{Src: remote.AddrPort(), Dst: local.AddrPort()}
	}
	return upstream.WithProxyProtocol(ctx, s.proxyProtocolData(existing, has))
}

// session is one proxied downstream connection.
type session struct {
	p     *Proxy
	down  net.Conn // as the listener handed it: closing it counts
	start time.Time
	// mono is start on the real clock, for the idle timer.
	mono time.Time
	id   uint64

	// Set before the pumps start, read-only afterwards.
	clusterName string
	// metadataMatch are the criteria that choose the cluster's subset.
	metadataMatch *upstream.MetadataMatch
	host          *upstream.Host
	// clusterMetadata is the chosen cluster's, for the formats'
	// %CLUSTER_METADATA%; set with host's discipline.
	clusterMetadata *corev3.Metadata
	failureReason   string
	// attempts counts the connection attempts made
	// (%UPSTREAM_REQUEST_ATTEMPT_COUNT%); set with host's discipline.
	attempts uint32
	up       upstreamIO // its closer is nil until connected
	// dynMeta is the connection's dynamic metadata with the tunnel's
	// request id, nil without one; respHeaders the tunnel response's
	// headers with propagate_response_headers. Both are set with host's
	// discipline.
	dynMeta     *corev3.Metadata
	respHeaders *corev3.HeaderMap
	// respTrailers are the tunnel response's trailers with
	// propagate_response_trailers, stored by the pump that reads their
	// end while the timers' logs may read them.
	respTrailers atomic.Pointer[corev3.HeaderMap]

	flags atomic.Uint32 // accesslog.ResponseFlags
	rx    atomic.Uint64 // bytes received from downstream
	tx    atomic.Uint64 // bytes sent downstream
	// lastActive is when bytes last moved, as nanoseconds since mono;
	// kept only with an idle timeout.
	lastActive atomic.Int64
	// heardDown and heardUp are when the downstream and the upstream last
	// sent a byte, as lastActive; kept only with downstream_idle_timeout
	// and upstream_idle_timeout (sideidle.go).
	heardDown atomic.Int64
	heardUp   atomic.Int64
	// upWriting is set while bytes of the downstream are being written
	// upstream: if the downstream goes away then, they are flushed first.
	upWriting atomic.Bool
	// flushing is set when the downstream went away while upstream bytes
	// were being written (upstream_flush_*).
	flushing atomic.Bool
	// drainClosed is set when check_drain_close closed the connection,
	// so that it counts once.
	drainClosed atomic.Bool

	mu     sync.Mutex
	closed bool // closeBoth ran: nothing may connect any more
	// relay is the event loop's hold on the connection, when it has it:
	// told when closeBoth closes the connections under it.
	relay    interface{ kick() }
	downOnce sync.Once
	// streamInfo is set when the listener logs the connection with what
	// the session records (netfilter.SetStreamInfo).
	streamInfo bool
	upOnce     sync.Once
	timers     []*time.Timer
}

func newSession(p *Proxy, c net.Conn) *session {
	return &session{p: p, down: c, start: p.now(), mono: time.Now(), id: p.connIDs.Add(1)}
}

// Errors a direction ends with, telling which side failed.
var (
	errDownstream = errors.New("downstream")
	errUpstream   = errors.New("upstream")
)

// run proxies the connection: it picks the cluster and a host, connects
// (within max_connect_attempts), then moves bytes both ways until both
// sides have ended, and logs the connection.
func (s *session) run() {
	cfg := s.p.cfg
	defer s.finish()
	s.clusterName, s.metadataMatch = s.p.pickCluster(s.down)
	if cfg.logOnStart {
		s.logEntry(datav3.AccessLogType_TcpConnectionStart)
	}
	if cfg.maxDuration > 0 {
		d := cfg.maxDuration
		if cfg.durationJitter > 0 {
			d += time.Duration(rand.Float64() * cfg.durationJitter / 100 * float64(d))
		}
		s.addTimer(d, func(func(time.Duration)) {
			s.p.stats.maxDuration.Inc()
			s.closeBoth()
		})
	}
	var cl netfilter.Cluster
	if s.p.clusters != nil {
		cl = s.p.clusters.Cluster(s.clusterName)
	}
	if cl == nil && s.p.onDemand != nil && s.p.onDemand.discover(s.p.ctx, s.clusterName) {
		cl = s.p.clusters.Cluster(s.clusterName)
	}
	if cl == nil {
		s.p.stats.cxNoRoute.Inc()
		s.setFlag(accesslog.NoClusterFound)
		return
	}
	s.clusterMetadata = cl.Metadata()
	var early *earlyReader
	if cfg.earlyData >= 0 {
		early = s.startEarlyRead(cfg.earlyData)
		if cfg.connectOnData && !early.waitFirst() {
			// As Envoy's: a downstream that ends without a byte gets
			// no upstream.
			_, _, _ = early.stop()
			return
		}
	}
	if !s.connect(cl) {
		if early != nil {
			_, _, _ = early.stop()
		}
		return
	}
	var e earlyData
	if early != nil {
		var err error
		if e.held, e.eof, err = early.stop(); err != nil {
			s.fail(errDownstream)
			return
		}
	}
	if cfg.logOnConnected {
		s.logEntry(datav3.AccessLogType_TcpUpstreamConnected)
	}
	if cfg.idleTimeout > 0 {
		s.startIdleTimer()
	}
	s.startSideIdleTimers()
	if cfg.flushInterval > 0 {
		s.startPeriodicLog()
	}
	s.proxy(e)
}

// earlyData is what the downstream sent before the upstream connected
// (max_early_data_bytes), and whether its stream ended then.
type earlyData struct {
	held []byte
	eof  bool
}

// connect connects upstream, trying up to max_connect_attempts hosts
// (with backoff_options between attempts), and reports whether it did.
func (s *session) connect(cl netfilter.Cluster) bool {
	cfg := s.p.cfg
	for attempt := uint32(0); ; attempt++ {
		s.mu.Lock()
		cut := s.closed
		s.mu.Unlock()
		if cut {
			return false // max duration, shutdown
		}
		if attempt >= cfg.maxAttempts {
			s.setFlag(accesslog.UpstreamRetryLimitExceeded)
			s.p.attemptsExceeded(cl).Inc()
			return false
		}
		if attempt > 0 && cfg.backoffBase > 0 && !s.backoff(attempt) {
			return false
		}
		h := cl.PickHost(s.pickContext())
		if h == nil {
			s.setFlag(accesslog.NoHealthyUpstream)
			return false
		}
		s.host, s.attempts = h, attempt+1
		var (
			up  upstreamIO
			err error
		)
		if cfg.tunnel != nil {
			up, err = s.openTunnel(cl, h)
		} else {
			up, err = s.connectTCP(cl, h)
		}
		if err != nil {
			if s.p.ctx.Err() != nil {
				return false // shutting down
			}
			if errors.Is(err, upstream.ErrOverflow) {
				// max_connections: as Envoy's, the connection ends
				// without another attempt or a host.
				s.host, s.attempts = nil, attempt
				s.setFlag(accesslog.UpstreamOverflow)
				return false
			}
			s.setFlag(accesslog.UpstreamConnectionFailure)
			s.failureReason = err.Error()
			if he := (*tlsconfig.HandshakeError)(nil); errors.As(err, &he) {
				s.failureReason = he.FailureReason()
			}
			if le := (*upstream.LocalConnectError)(nil); errors.As(err, &le) {
				// original_src's bind: Envoy's reason, without the
				// host the connection never reached.
				s.failureReason = le.Reason
			}
			continue
		}
		reportConnected(h)
		s.mu.Lock()
		if s.closed {
			// Cut (shutdown, max duration) while connecting.
			s.mu.Unlock()
			_ = up.closer.Close()
			return false
		}
		s.up = up
		s.mu.Unlock()
		return true
	}
}

// upstreamIO is the upstream side of a connection as the pumps use it: a
// TCP connection, or a tunnel through an HTTP proxy.
type upstreamIO struct {
	closer     io.Closer
	r          io.Reader
	w          io.Writer
	closeWrite func() error
	local      string // %UPSTREAM_LOCAL_ADDRESS%
	// tls is the connection's TLS (%UPSTREAM_TLS_*%...), nil for none.
	tls *accesslog.TLSInfo
	// bytes are the cluster's byte stats of the connection under r and w,
	// which the pumps count since they bypass the cluster's connection;
	// zero for an HTTP/2 tunnel, whose connection counts its own bytes.
	bytes upstreamBytes
	// trailer returns the tunnel response's trailers once r has ended,
	// nil when they are not kept.
	trailer func() http.Header
}

// connectTCP opens a plain TCP connection to h.
func (s *session) connectTCP(cl netfilter.Cluster, h *upstream.Host) (upstreamIO, error) {
	conn, err := cl.ConnectHost(s.upstreamContext(), h)
	if err != nil {
		return upstreamIO{}, err
	}
	return upstreamIO{
		closer:     conn,
		r:          rawConn(conn),
		w:          rawConn(conn),
		closeWrite: func() error { return closeWrite(conn) },
		local:      accesslog.AddressString(conn.LocalAddr()),
		tls:        accesslog.UpstreamTLS(conn),
		bytes:      upstreamBytesOf(conn),
	}, nil
}

// backoff waits before attempt (1-based retries) as Envoy's jittered
// exponential backoff does: a random time below base*2^(attempt-1),
// capped at max_interval. It reports false when the proxy shut down.
func (s *session) backoff(attempt uint32) bool {
	cfg := s.p.cfg
	limit := cfg.backoffBase
	for i := uint32(1); i < attempt && limit < cfg.backoffMax; i++ {
		limit *= 2
	}
	limit = min(limit, cfg.backoffMax)
	t := time.NewTimer(time.Duration(rand.Int64N(int64(limit)) + 1))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.p.ctx.Done():
		return false
	}
}

// proxy moves bytes both ways until both directions have ended: on an
// event loop where there is one (plain TCP on Linux), else, or once the
// connection turns to bulk transfer, with a goroutine per direction.
func (s *session) proxy(early earlyData) {
	var h handoff
	if len(early.held) == 0 && !early.eof && s.relayOnLoop(&h) {
		return
	}
	defer h.release(s.p)
	limit := uint32(0)
	if bl, ok := s.down.(interface{ BufferLimit() uint32 }); ok {
		limit = bl.BufferLimit()
	}
	downRaw := rawConn(s.down)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if h.upEnded || !s.sendEarly(early) {
			return
		}
		buf, put := s.p.getBuf(limit)
		defer put()
		s.pumpUp(downRaw, s.up.w, buf, h.toUp)
	}()
	if !h.downEnded {
		buf, put := s.p.getBuf(limit)
		s.pumpDown(s.up.r, downRaw, buf, h.toDown)
		put()
	}
	<-done
}

// handoff is what the event loop leaves to the goroutine relay when it
// gives a connection up.
type handoff struct {
	// upEnded, downEnded: the direction (named by where its bytes go)
	// has ended, its end of stream forwarded.
	upEnded, downEnded bool
	// toUp, toDown were read but not written yet; they are in bufs,
	// which go back to the proxy's pool at the end.
	toUp, toDown []byte
	bufs         []*[]byte
}

func (h *handoff) release(p *Proxy) {
	for _, b := range h.bufs {
		p.bufs.Put(b)
	}
}

// pumpUp copies the downstream's bytes upstream, starting with held (read
// already). A write that has to wait for the upstream pauses the
// downstream's reading (downstream_flow_control_*); the downstream's FIN
// becomes a half-close of the upstream.
func (s *session) pumpUp(src net.Conn, dst io.Writer, buf, held []byte) {
	st := s.p.stats
	w := newWriter(dst)
	w.onWait = st.pausedReading.Inc
	if len(held) > 0 {
		if !s.sendUp(w, held) {
			return
		}
		st.resumedReading.Inc() // the loop counted the pause
	}
	for {
		n, err := src.Read(buf)
		if n > 0 {
			s.touch()
			s.heard(downSide, time.Since(s.mono))
			st.rxBytesTotal.Add(uint64(n))
			s.rx.Add(uint64(n))
			if !s.sendUp(w, buf[:n]) || s.drainClose() {
				return
			}
		}
		if err == io.EOF {
			if s.up.closeWrite() != nil {
				s.fail(errUpstream)
			}
			return
		}
		if err != nil {
			s.fail(errDownstream)
			return
		}
	}
}

// sendEarly writes what the downstream sent before the upstream
// connected, and its end of stream when it ended then; it reports whether
// the upstream direction goes on.
func (s *session) sendEarly(e earlyData) bool {
	if len(e.held) > 0 {
		w := newWriter(s.up.w)
		w.onWait = s.p.stats.pausedReading.Inc
		if !s.sendUp(w, e.held) {
			return false
		}
	}
	if e.eof {
		if s.up.closeWrite() != nil {
			s.fail(errUpstream)
		}
		return false
	}
	return true
}

// sendUp writes bytes of the downstream upstream, and reports whether the
// pump goes on.
func (s *session) sendUp(w *writer, p []byte) bool {
	st := s.p.stats
	st.rxBuffered.Add(int64(len(p)))
	s.up.bytes.buffer(len(p))
	s.upWriting.Store(true)
	n, waited, werr := w.write(p)
	s.upWriting.Store(false)
	st.rxBuffered.Add(-int64(len(p)))
	s.up.bytes.buffer(-len(p))
	s.up.bytes.written(n)
	if waited {
		st.resumedReading.Inc()
	}
	if s.flushing.Load() {
		// The downstream is gone; its last bytes are out.
		s.closeUp()
		return false
	}
	if werr != nil {
		s.fail(errUpstream)
		return false
	}
	s.touch()
	return true
}

// pumpDown copies the upstream's bytes downstream, starting with held
// (read already); the upstream's FIN becomes a half-close of the
// downstream.
func (s *session) pumpDown(src io.Reader, dst net.Conn, buf, held []byte) {
	w := newWriter(dst)
	if len(held) > 0 && !s.sendDown(w, held) {
		return
	}
	for {
		n, err := src.Read(buf)
		if n > 0 {
			s.touch()
			s.heard(upSide, time.Since(s.mono))
			s.up.bytes.read(n)
			if !s.sendDown(w, buf[:n]) || s.drainClose() {
				return
			}
		}
		if err != nil {
			s.up.bytes.readEnded(err)
		}
		if err == io.EOF {
			s.keepResponseTrailers()
			if closeWrite(s.down) != nil {
				s.fail(errDownstream)
			}
			return
		}
		if err != nil {
			s.fail(errUpstream)
			return
		}
	}
}

// sendDown writes bytes of the upstream downstream, and reports whether
// the pump goes on.
func (s *session) sendDown(w *writer, p []byte) bool {
	st := s.p.stats
	st.txBuffered.Add(int64(len(p)))
	n, _, werr := w.write(p)
	st.txBuffered.Add(-int64(len(p)))
	st.txBytesTotal.Add(uint64(n))
	s.tx.Add(uint64(n))
	if werr != nil {
		s.fail(errDownstream)
		return false
	}
	s.touch()
	return true
}

// fail ends the connection after an error on one side. When the
// downstream failed while its bytes were being written upstream, the
// upstream stays open until they are (upstream_flush_*), as Envoy's
// drainer keeps it; otherwise both sides close.
func (s *session) fail(side error) {
	s.closeDown()
	if side == errDownstream && s.upWriting.Load() && s.flushing.CompareAndSwap(false, true) {
		s.p.stats.flushTotal.Inc()
		s.p.stats.flushActive.Inc()
		if s.upWriting.Load() {
			return // pumpUp closes the upstream after its write
		}
	}
	s.closeUp()
}

// drainClose closes the connection when check_drain_close is set and
// its listener's drain says so (Envoy's drainClose, asked after each read
// and write), and reports whether it did. The bytes just read have been
// written: nothing is left to flush in this direction, and the other's
// write is cut, as Envoy's FlushWrite close of the downstream closes the
// upstream.
func (s *session) drainClose() bool {
	if !s.p.cfg.checkDrainClose || s.p.drain == nil || !s.p.drain.DrainClose() {
		return false
	}
	if s.drainClosed.CompareAndSwap(false, true) {
		s.p.stats.drainClose.Inc()
	}
	s.closeBoth()
	return true
}

// closeDown closes the downstream connection, once.
func (s *session) closeDown() {
	s.downOnce.Do(func() { _ = s.down.Close() })
}

// closeUp closes the upstream connection, once it exists, once.
func (s *session) closeUp() {
	s.mu.Lock()
	up := s.up.closer
	s.mu.Unlock()
	if up == nil {
		return
	}
	s.upOnce.Do(func() {
		_ = up.Close()
		if s.flushing.Load() {
			s.p.stats.flushActive.Dec()
		}
	})
}

// closeBoth cuts the connection: the idle timeout, the maximum duration,
// shutdown. A connection attempt in progress is dropped when it ends.
func (s *session) closeBoth() {
	s.mu.Lock()
	s.closed = true
	r := s.relay
	s.mu.Unlock()
	s.closeDown()
	s.closeUp()
	if r != nil {
		r.kick()
	}
}

// finish closes what is left, stops the timers and logs the connection.
func (s *session) finish() {
	s.mu.Lock()
	s.closed = true
	timers := s.timers
	s.timers = nil
	s.mu.Unlock()
	for _, t := range timers {
		t.Stop()
	}
	s.closeDown()
	s.closeUp()
	s.logEntry(datav3.AccessLogType_TcpConnectionEnd)
	if s.streamInfo {
		netfilter.StreamInfoDone(s.down)
	}
}

// addTimer runs f after d unless the session finishes first. f gets a
// rearm function, which runs it again after a given time unless the
// session has finished by then.
func (s *session) addTimer(d time.Duration, f func(rearm func(time.Duration))) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var t *time.Timer
	rearm := func(next time.Duration) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.closed {
			t.Reset(next)
		}
	}
	// t is set before the lock is released, and f runs after taking it
	// (through rearm), so f always sees it.
	t = time.AfterFunc(d, func() { f(rearm) })
	s.timers = append(s.timers, t)
}

// touch records activity for the idle timer.
func (s *session) touch() {
	if s.p.cfg.idleTimeout > 0 {
		s.lastActive.Store(int64(time.Since(s.mono)))
	}
}

// startIdleTimer closes the connection once no byte has moved either way
// for idle_timeout. The timer does not move with every read: when it
// fires, it sleeps again for what is left since the last activity.
func (s *session) startIdleTimer() {
	idle := s.p.cfg.idleTimeout
	s.touch()
	s.addTimer(idle, func(rearm func(time.Duration)) {
		since := time.Since(s.mono) - time.Duration(s.lastActive.Load())
		if since < idle {
			rearm(idle - since)
			return
		}
		s.p.stats.idleTimeout.Inc()
		s.closeBoth()
	})
}

// startPeriodicLog logs the connection every access_log_flush_interval
// (TcpPeriodic entries) while it lasts.
func (s *session) startPeriodicLog() {
	every := s.p.cfg.flushInterval
	s.addTimer(every, func(rearm func(time.Duration)) {
		s.logEntry(datav3.AccessLogType_TcpPeriodic)
		rearm(every)
	})
}

// setFlag adds a response flag.
func (s *session) setFlag(f accesslog.ResponseFlags) {
	for {
		old := s.flags.Load()
		if s.flags.CompareAndSwap(old, old|uint32(f)) {
			return
		}
	}
}

// PickHash computes the connection's hash key with tcp_proxy's
// hash_policy when the cluster's balancer reads it (upstream.Hasher).
func (s *session) PickHash() (uint64, bool) { return s.p.cfg.hash.of(s.down) }

// PickHashWith computes the connection's hash key with the balancer's
// own hash_policy (cluster.PolicyHasher), which Envoy evaluates without
// request headers: only its connection_properties entries (the
// downstream's IP) hash a connection.
func (s *session) PickHashWith(p *router.HashPolicy) (uint64, bool) {
	in := router.HashInput{}
	if ta, ok := s.down.RemoteAddr().(*net.TCPAddr); ok {
		in.SourceIP = ta.AddrPort().Addr().Unmap().String()
	}
	return p.Hash(&in)
}
