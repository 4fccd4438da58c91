package httpconn

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpconn/http1"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/sockio"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// h2Preface is what an HTTP/2 client with prior knowledge sends first.
const h2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// serverConn is one downstream connection and everything its requests
// reuse: buffers, the parsed request, the stream state and the upstream
// scratch space. One goroutine (HandleConn's) owns it.
type serverConn struct {
	m  *Manager
	nc net.Conn
	// cc counts the bytes read and written (downstream_cx_rx/tx_bytes).
	cc *countedConn
	br *bufio.Reader
	// src is what br reads (see park.go).
	src connSource

	id       uint64
	remote   string // "ip:port"
	remoteIP string // x-forwarded-for
	local    string
	// direct is the socket's peer ("ip:port"), whatever a listener
	// filter restored as remote.
	direct string
	// tls describes a TLS connection for the access log (nil: plaintext),
	// sni is the server name the client asked for.
	tls *accesslog.TLSInfo
	sni string
	// ja3 and ja4 are the tls_inspector's fingerprints of the ClientHello.
	ja3, ja4 string
	// chain is the name of the listener's filter chain serving the
	// connection (%FILTER_CHAIN_NAME%).
	chain string
	// origDst is the original destination a listener restored, if any.
	origDst netip.AddrPort
	// source is the upstream source a listener filter (original_src)
	// chose for the connection's requests; its Addr is invalid for none.
	source upstream.Source
	// upCtx is the manager's context carrying the downstream side a
	// cluster's upstream PROXY header describes (see proxyProtocolState);
	// nil for none.
	upCtx    context.Context
	opened   time.Time
	requests uint32
	// remoteClosed: the client ended the connection (for the
	// downstream_cx_destroy_remote/local split).
	remoteClosed bool
	// activeRqDestroyed: the connection ends with a request in flight
	// (see destroyedActive).
	activeRqDestroyed bool

	// mu guards idle, closing and h2 against Manager.Close, and waiting,
	// evicting and swept against the idle sweep.
	mu      sync.Mutex
	idle    bool
	closing bool
	// waiting: the connection waits for its next HTTP/1 request and may
	// move to the idle set; waits counts those waits, swept is the count
	// the last sweep saw (the same twice: idle for a whole sweep period);
	// evicting: the sweep woke the wait to move it (see idleset.go).
	waiting, evicting bool
	waits, swept      uint32
	// inlining: the connection serves a request inside its socket's
	// wait (see inline.go); cutting: cut ended the connection.
	inlining, cutting bool
	// idleSlot and idleGen are the connection's place in the idle set
	// while it is there (inIdleSet), and idleTimer the timer of its idle
	// timeout meanwhile; the set's lock guards them.
	inIdleSet bool
	idleSlot  int32
	idleGen   uint32
	idleTimer *time.Timer
	// resumed: the goroutine the idle set started goes on with the wait
	// that began at waitStart.
	resumed   bool
	waitStart time.Time
	// awaitN counts the starts and ends of the waits of the connection's
	// streams on their upstreams (odd: one waits), awaits publishes it
	// to the sweep, and awaitSwept is what the last sweep saw (see
	// awaitsweep.go; the sweep holds the manager's lock).
	awaitN     uint32
	awaits     atomic.Uint32
	awaitSwept uint32
	// http1 records that the connection is counted in
	// downstream_cx_http1_active; ended that end ran.
	http1, ended bool
	// h2 is the HTTP/2 side of the connection, once it speaks HTTP/2.
	h2 *h2Conn

	// x is the state of HTTP/1 requests and their buffers: made for the
	// first request, dropped while the connection is parked (see
	// park.go) and made again when it wakes. nil for HTTP/2.
	x *h1Exchange
	// xShared is x for other goroutines (cut).
	xShared atomic.Pointer[h1Exchange]
	// park is the state of the idle-connection parking (see park.go).
	park parkState
	// rd and wd are the socket's read and write deadlines; lastNow is
	// the real time the last request ended (at first, the time the
	// connection was accepted), which arms the wait for the next one.
	rd, wd  deadline
	lastNow time.Time
	// maxDurAt is when max_connection_duration ends the connection (zero:
	// never); maxDurDone records that it did, so it is counted once.
	maxDurAt time.Time
	// waitMaxDurAt is maxDurAt for the waits between HTTP/1 requests;
	// zero with http1_safe_max_connection_duration, which lets an idle
	// connection wait for its next request and answer it with
	// connection: close instead.
	waitMaxDurAt time.Time
	maxDurDone   bool
	// linger: the proxy ends the connection after a response it wrote
	// whole, so the close waits for the client (delayed_close_timeout);
	// halfClose: that response's body ends with the connection, which
	// must therefore shut its write side at once.
	linger, halfClose bool
	// reqHard is the request timeout's limit for the request being read
	// (zero: none); writeIdle the idle timeout of its response's writes.
	reqHard   time.Time
	writeIdle time.Duration
	// How the response in flight is framed (chunked, or ended by the
	// connection's end), and whether it was cut.
	chunked, closeDelimited, aborted bool

	// filterState is what HTTP filters keep for the connection.
	filterState connState
	// netState is the filter state the connection's network filters
	// keep (sni_cluster's cluster name), nil when it keeps none.
	netState netfilter.FilterStater

	// goneFn is gone, bound once so that binding a stream to the
	// connection allocates nothing.
	goneFn func() bool
}

// h1Exchange is what an HTTP/1 connection's requests reuse: the request
// head's buffer, the parsed request, the stream state, the response's
// output buffer and the upstream scratch space. It is most of a
// connection's memory, so a connection waiting for its next request gives
// it back to the manager's pool (see park.go), and takes one again when
// the request arrives.
type h1Exchange struct {
	// out gathers the response for one write.
	out  outBuf
	head []byte
	req  http1.Request
	body http1.BodyReader
	st   stream
	// trailer are the response's trailers, sent after a chunked body
	// with enable_trailers (see trailers.go).
	trailer http.Header
	// up is the scratch space of the upstream exchange.
	up upstreamScratch
	// flushDown and flushUp are bound once so that handing them to
	// body readers allocates nothing per request.
	flushDown, flushUp func() error
}

// newH1Exchange makes the state of a manager's HTTP/1 requests.
func newH1Exchange() *h1Exchange {
	x := &h1Exchange{}
	x.flushDown = x.out.flush
	x.flushUp = x.up.out.flush
	return x
}

// exchange returns the connection's HTTP/1 state, taken from the
// manager's pool when it has none (its first request, or the first after
// it parked).
func (c *serverConn) exchange() *h1Exchange {
	if c.x != nil {
		return c.x
	}
	x := c.m.exchanges.Get().(*h1Exchange)
	x.st.init(c.m, c, x)
	c.x = x
	c.xShared.Store(x)
	return x
}

// newServerConn prepares a connection's state; serve runs it.
func newServerConn(m *Manager, nc net.Conn) *serverConn {
	c := &serverConn{
		m:      m,
		nc:     nc,
		id:     m.connIDs.Add(1),
		opened: m.stamp(time.Now()),
		// Until its first request arrives, a connection is idle: Close
		// may end it at once.
		idle: true,
	}
	c.remote, c.local = addrStrings(nc.RemoteAddr(), nc.LocalAddr())
	c.remoteIP = hostOnly(c.remote)
	c.direct = c.remote
	if d, ok := nc.(interface{ DirectRemoteAddr() net.Addr }); ok {
		c.direct = accesslog.AddressString(d.DirectRemoteAddr())
	}
	c.tls, c.sni, c.chain = tlsconfig.AccessLogInfo(nc), accesslog.RequestedServerName(nc), accesslog.FilterChainName(nc)
	c.ja3, c.ja4 = accesslog.TLSFingerprints(nc)
	c.origDst, _ = upstream.OriginalDst(nc)
	c.netState, _ = nc.(netfilter.FilterStater)
	c.source, _ = upstream.SourceOf(nc)
	c.upCtx = m.proxyProtocolState(nc)
	c.cc = &countedConn{Conn: nc, stats: m.stats, tcp: plainTCP(nc)}
	if c.cc.tcp != nil {
		// What the connection writes goes straight to its socket, as
		// writePair's already did (see sockio). Nothing shows a write
		// error's text, so its network is named "tcp" whatever the
		// listener's is.
		c.cc.sock = sockio.New(c.cc.tcp, "tcp")
	}
	c.src.cc = c.cc
	c.goneFn = c.gone
	return c
}

// serve runs the connection: HTTP/2 if the codec says so or the client
// opens with the HTTP/2 preface, HTTP/1 otherwise. It returns when the
// connection has ended, or when it moved to the idle set (see idleset.go).
func (c *serverConn) serve() {
	st := c.m.stats
	st.cxTotal.Inc()
	st.cxActive.Inc()
	// The idle timeout and max_connection_duration count from the
	// accept, as Envoy's timers do.
	c.lastNow = time.Now()
	c.maxDurAt = after(c.lastNow, jittered(c.m.cfg.maxConnectionDuration, c.m.cfg.maxConnectionDurationJitter, rand.Float64))
	c.waitMaxDurAt = c.maxDurAt
	if c.m.cfg.http1SafeMaxDuration {
		c.waitMaxDurAt = time.Time{}
	}
	c.br = c.m.readers.Get().(*bufio.Reader)
	c.br.Reset(&c.src)
	switch c.m.cfg.codec {
	case hcmv3.HttpConnectionManager_HTTP2:
		c.serveHTTP2Limited()
		c.end()
		return
	case hcmv3.HttpConnectionManager_AUTO:
		// Over TLS the protocol ALPN negotiated decides, as in Envoy;
		// without one the first bytes do.
		switch p, _ := negotiatedProtocol(c.nc); {
		case p == "h2", p == "" && c.sniffHTTP2():
			c.serveHTTP2Limited()
			c.end()
			return
		}
	}
	st.cxHTTP1Total.Inc()
	st.cxHTTP1Active.Inc()
	c.http1 = true
	c.startParking()
	c.continueHTTP1()
}

// continueHTTP1 serves HTTP/1 requests until the connection ends, and
// ends it, unless it moves to the idle set first: from then on it belongs
// to the goroutine the set starts for it, which calls continueHTTP1 again.
func (c *serverConn) continueHTTP1() {
	if c.serveHTTP1() {
		return
	}
	c.stopParking()
	if c.linger && !c.remoteClosed {
		c.delayedClose(c.halfClose)
	} else {
		_ = c.nc.Close()
	}
	c.end()
}

// end accounts for the end of the connection, gives its buffers back
// and forgets it; whichever goroutine ends the connection calls it, once.
func (c *serverConn) end() {
	if c.ended {
		return
	}
	c.ended = true
	st := c.m.stats
	if c.http1 {
		st.cxHTTP1Active.Dec()
	}
	if c.x == nil || !c.x.st.leaked {
		// Otherwise an upstream transport may still read from them.
		c.letGo()
	}
	st.cxActive.Dec()
	st.cxDestroy.Inc()
	if c.remoteClosed {
		st.cxDestroyRemote.Inc()
	} else {
		st.cxDestroyLocal.Inc()
	}
	switch {
	case c.activeRqDestroyed && c.remoteClosed:
		st.cxDestroyRemoteActiveRq.Inc()
	case c.activeRqDestroyed:
		st.cxDestroyLocalActiveRq.Inc()
	}
	st.cxLengthMs.Record(uint64(c.m.stamp(time.Now()).Sub(c.opened).Milliseconds()))
	c.m.unregister(c)
}

// destroyedActive records, once, that the connection ends with a request
// in flight: downstream_cx_destroy_active_rq now, and its local or remote
// share when the connection ends and who closed it is known.
func (c *serverConn) destroyedActive() {
	if !c.activeRqDestroyed {
		c.activeRqDestroyed = true
		c.m.stats.cxDestroyActiveRq.Inc()
	}
}

// negotiatedProtocol is the protocol ALPN negotiated on a TLS connection
// ("" when none was, or the connection is not TLS).
func negotiatedProtocol(nc net.Conn) (string, bool) {
	t, ok := nc.(interface {
		TLSConnectionState() (tls.ConnectionState, bool)
	})
	if !ok {
		return "", false
	}
	cs, ok := t.TLSConnectionState()
	return cs.NegotiatedProtocol, ok
}

// serveHTTP2Limited serves the connection as HTTP/2, under
// max_connection_duration: once it passes, the connection is asked to end
// as Manager.Close asks it (a GOAWAY, then the close once its open
// streams are done), which is Envoy's drain of an HTTP/2 connection at its
// maximum duration. A timer serves this rather than the read deadline,
// which the HTTP/2 read loop owns.
func (c *serverConn) serveHTTP2Limited() {
	if !c.maxDurAt.IsZero() {
		t := time.AfterFunc(time.Until(c.maxDurAt), func() {
			c.m.stats.cxMaxDuration.Inc()
			c.mu.Lock()
			h := c.h2
			c.mu.Unlock()
			if h == nil {
				// Not started yet: it will find the duration passed.
				c.closeIfIdle()
				return
			}
			h.startDrain()
		})
		defer t.Stop()
	}
	c.serveHTTP2()
}

// sniffHTTP2 reads as much of the first bytes as it takes to tell the
// HTTP/2 preface from an HTTP/1 request line, within the idle timeout
// (and max_connection_duration) counted from the accept. When they pass
// first, the HTTP/1 wait that follows finds them passed and ends the
// connection.
func (c *serverConn) sniffHTTP2() bool {
	d := earliest(after(c.lastNow, c.m.idleTimeout()), c.waitMaxDurAt)
	if c.rd.need(d, true) {
		_ = c.nc.SetReadDeadline(d)
	}
	n := 1
	for {
		b, err := c.br.Peek(n)
		if err != nil || !bytes.HasPrefix([]byte(h2Preface), b) {
			return false
		}
		if n == len(h2Preface) {
			return true
		}
		// Peek filled in whatever the client sent: compare all of it
		// before waiting for more.
		n = max(n+1, min(c.br.Buffered(), len(h2Preface)))
	}
}

// serveHTTP1 serves requests until one of them ends the connection, and
// reports whether the connection moved to the idle set instead (it then
// belongs to another goroutine: nothing of it may be touched). When the
// proxy ends it after a response it wrote whole (Connection: close, a
// protocol error, max_requests_per_connection, a drain...), it records
// that the close must wait for the client (see delayedClose).
func (c *serverConn) serveHTTP1() (moved bool) {
	for {
		var keep bool
		switch c.waitForRequest() {
		case waitEnded:
			return false
		case waitMoved:
			return true
		case waitServed:
			continue
		case waitHeadRead:
			keep = c.forwardRequest()
		default:
			keep = c.serveRequest()
		}
		if !c.afterRequest(keep) {
			return false
		}
		c.startInline()
	}
}

// afterRequest accounts for a request served, keep telling whether the
// connection may carry another; it returns whether it carries on.
func (c *serverConn) afterRequest(keep bool) bool {
	if !keep {
		c.linger = c.x.st.started && !c.aborted && !c.remoteClosed
		c.halfClose = c.closeDelimited
		return false
	}
	c.requests++
	if !c.m.cfg.http1SafeMaxDuration && c.maxDurationPassed(c.lastNow) {
		// The duration ended during the response, after its head went
		// out without Connection: close: the connection ends with it,
		// as Envoy's drain ends it.
		c.linger = true
		return false
	}
	return true
}

// What waitForRequest came to.
const (
	// waitArrived: the next request's first byte is in the read buffer.
	waitArrived = iota
	// waitEnded: the connection ends.
	waitEnded
	// waitMoved: the connection moved to the idle set.
	waitMoved
	// waitServed: the wait served requests inline (see inline.go); the
	// connection waits again.
	waitServed
	// waitHeadRead: the wait read the next request's head inline; its
	// forwarding is left to forwardRequest.
	waitHeadRead
)

// waitForRequest waits for the first byte of the next request, under the
// idle timeout and max_connection_duration. It returns waitEnded when the
// connection should end instead: closed by the client, idle for too long,
// at its maximum duration, or the manager closing. A connection that can
// park waits without its buffers (see park.go), and, once idle for a
// while, without its goroutine (waitMoved, see idleset.go).
//
// While waiting, the socket's deadline is the earliest of the idle
// timeout, the stream idle timeout and the maximum duration, so that on a
// busy connection the wait and the request that follows share one
// deadline, kept lazily (see slackOf). When it fires before the idle
// timeout or the maximum duration is due (a lazily kept deadline, or the
// stream idle one), the wait goes on under the exact deadline left: both
// end the connection at their setting, never early.
func (c *serverConn) waitForRequest() int {
	if !c.beginWait() {
		return waitEnded
	}
	for c.br == nil || c.br.Buffered() == 0 {
		idle, streamIdle := c.armWait()
		err := c.awaitByte()
		if err == nil {
			switch c.park.outcome {
			case inlineServed:
				return waitServed
			case inlineHeadRead:
				return waitHeadRead
			case inlineEnded:
				return waitEnded
			}
			break
		}
		// After requests served inline, the wait is theirs.
		waitStart := c.waitStart
		// Woken early, or ending: the rest of the wait, if any, parks
		// without the buffers (see parkState.hold).
		c.park.hold = false
		if !isTimeout(err) {
			c.remoteClosed = true
			return waitEnded
		}
		if c.closingNow() {
			return waitEnded
		}
		c.lastNow = time.Now()
		if idle > 0 && c.lastNow.Sub(waitStart) >= idle {
			c.m.stats.cxIdleTimeout.Inc()
			return waitEnded
		}
		if !c.m.cfg.http1SafeMaxDuration && c.maxDurationPassed(c.lastNow) {
			return waitEnded
		}
		// Early: the stream idle deadline, one kept lazily, or the
		// sweep moving the connection to the idle set. Wait for what
		// is left, exactly.
		c.rd.forget()
		// In the set it wakes when this wait would: a reduce_timeouts
		// that acts meanwhile is seen at the next wake-up, as here.
		if c.evicted() && c.moveToIdleSet(earliest(earliest(after(waitStart, idle), after(c.lastNow, streamIdle)), c.waitMaxDurAt)) {
			return waitMoved
		}
	}
	if !c.setIdle(false) {
		return waitEnded
	}
	return waitArrived
}

// beginWait starts the wait for the next request: it fails once the
// manager is closing.
func (c *serverConn) beginWait() bool {
	if c.park.raw != nil && c.x != nil && c.x.st.leaked {
		// An upstream transport may still read the last request's
		// body from the buffers.
		c.stopParking()
	}
	if !c.startWait() {
		return false
	}
	if !c.resumed {
		c.waitStart = c.lastNow
	}
	c.resumed = false
	return true
}

// armWait sets the read deadline of the wait for the next request, and
// returns the idle and stream idle timeouts it took.
func (c *serverConn) armWait() (idle, streamIdle time.Duration) {
	// Both are read again after each wake-up: the overload manager's
	// reduce_timeouts scales them as it acts.
	idle, streamIdle = c.m.idleTimeout(), c.streamIdle()
	var d time.Time
	if c.waitStart.Equal(c.lastNow) {
		// The usual wait, starting now: both timeouts count from the
		// same instant, so the earlier deadline is the shorter one's,
		// computed once.
		d = after(c.lastNow, shorterTimeout(idle, streamIdle))
	} else {
		d = earliest(after(c.waitStart, idle), after(c.lastNow, streamIdle))
	}
	d = earliest(d, c.waitMaxDurAt)
	if c.rd.needWithin(d, slackOf(streamIdle)) {
		_ = c.nc.SetReadDeadline(d)
	}
	return idle, streamIdle
}

// maxDurationPassed reports whether max_connection_duration has passed at
// now, counting downstream_cx_max_duration_reached the first time. Without
// a maximum it costs a comparison.
func (c *serverConn) maxDurationPassed(now time.Time) bool {
	if c.maxDurAt.IsZero() || now.Before(c.maxDurAt) {
		return false
	}
	if !c.maxDurDone {
		c.maxDurDone = true
		c.m.stats.cxMaxDuration.Inc()
	}
	return true
}

// setIdle records whether the connection waits between requests. Going
// idle fails once the manager is closing; a request already arriving is
// served (and answered with Connection: close).
func (c *serverConn) setIdle(idle bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.setIdleLocked(idle)
}

// setIdleLocked is setIdle with c.mu held.
func (c *serverConn) setIdleLocked(idle bool) bool {
	c.idle = idle
	if !idle {
		c.waiting = false
		if c.evicting {
			// The request arrived as the sweep moved the read
			// deadline: the next read sets it again.
			c.evicting = false
			c.rd.forget()
		}
	}
	if c.closing {
		// closeIfIdle may have moved the read deadline.
		c.rd.forget()
		return !idle
	}
	return true
}

// closeIfIdle is Manager.Close's request to end the connection: at once if
// it waits between requests, after the current response otherwise.
func (c *serverConn) closeIfIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closing = true
	if c.h2 != nil {
		c.h2.goAway(errCodeNo)
		return
	}
	if c.idle {
		// Wake the read waiting for the next request, or the
		// connection in the idle set.
		_ = c.nc.SetReadDeadline(time.Unix(1, 0))
		if c.m.idlers.take(c) {
			go c.resume()
		}
	}
}

// abandonBody implements downstream: a read deadline in the past ends the
// body's reads; the record of the deadline is dropped, so that a next
// request, if the connection carries one, gets its own.
func (c *serverConn) abandonBody() {
	_ = c.nc.SetReadDeadline(time.Unix(1, 0))
	c.rd.forget()
}

// cut ends the connection now, interrupting the request in flight, if
// any, at the upstream too.
func (c *serverConn) cut() {
	c.mu.Lock()
	c.cutting = true
	inlining, h := c.inlining, c.h2
	c.mu.Unlock()
	if inlining {
		// Close would wait for the exchange served inside the socket's
		// wait (see inline.go): fail its reads and writes, and end it,
		// first.
		_ = c.nc.SetDeadline(time.Unix(1, 0))
		c.interrupt()
	}
	_ = c.nc.Close()
	if !inlining {
		c.interrupt()
	}
	if h != nil {
		h.cut()
	}
}

// interrupt interrupts the request in flight at the upstream, if any.
func (c *serverConn) interrupt() {
	if x := c.xShared.Load(); x != nil {
		// The exchange may be another connection's by now, at a
		// shutdown that cuts every connection anyway.
		x.st.interrupt()
	}
}

// setH2 records that the connection speaks HTTP/2, so that Close and
// Shutdown reach its streams.
func (c *serverConn) setH2(h *h2Conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.h2 = h
}

// closingNow reports whether the manager asked the connection to close.
func (c *serverConn) closingNow() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closing
}

// isTimeout reports whether err is a deadline expiring.
func isTimeout(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded)
}

// countedConn counts a connection's bytes in the manager's stats.
type countedConn struct {
	net.Conn
	stats *hcmStats
	// tcp is the plain TCP socket under Conn (see plainTCP), nil when
	// there is none: what writePair needs.
	tcp *net.TCPConn
	// sock writes tcp without entering the scheduler (see sockio); nil
	// when tcp is.
	sock *sockio.Conn
}

// writePair implements pairWriter: v's pieces in one writev. Only called
// when tcp is set.
func (c *countedConn) writePair(v *net.Buffers) (int64, error) {
	var (
		n   int64
		err error
	)
	if c.sock != nil {
		n, err = c.sock.WriteBuffers(v)
	} else {
		n, err = v.WriteTo(c.tcp)
	}
	if n > 0 {
		c.stats.cxTxBytes.Add(uint64(n))
	}
	return n, err
}

// Read reads from the connection and counts the bytes.
func (c *countedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.stats.cxRxBytes.Add(uint64(n))
	}
	return n, err
}

// Write writes to the connection and counts the bytes.
func (c *countedConn) Write(p []byte) (int, error) {
	var (
		n   int
		err error
	)
	if c.sock != nil {
		n, err = c.sock.Write(p)
	} else {
		n, err = c.Conn.Write(p)
	}
	if n > 0 {
		c.stats.cxTxBytes.Add(uint64(n))
	}
	return n, err
}

// addrStrings renders two addresses as addrString does, in one
// allocation: a new connection pays one string for both of its addresses
// (net.TCPAddr's String allocates three times for each).
func addrStrings(a, b net.Addr) (string, string) {
	var buf [64]byte
	ab := appendAddr(buf[:0], a)
	n := len(ab)
	s := string(appendAddr(ab, b))
	return s[:n], s[n:]
}

// appendAddr appends a TCP address as "ip:port" without allocating (the
// String method of net.TCPAddr allocates twice); other addresses use
// their String form.
func appendAddr(dst []byte, a net.Addr) []byte {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		if a == nil {
			return dst
		}
		return append(dst, a.String()...)
	}
	ap := ta.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()).AppendTo(dst)
}

// hostOnly strips the port (and IPv6 brackets) from "host:port".
func hostOnly(hostport string) string {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return hostport
	}
	return host
}
