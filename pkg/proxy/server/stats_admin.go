package server

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// adminStats are the admin listener's stats under Envoy's names: those of
// its connection manager ("http.admin."), of its listener
// ("listener.admin.", with the per-listener connection manager stats under
// "listener.admin.http.admin." and the worker stats under
// "listener.admin.main_thread."). Envoy serves the admin with an ordinary
// connection manager; Outrigger serves it with net/http, so the server
// counts around it: connections through the http.Server's ConnContext and
// ConnState hooks, requests by wrapping the handler.
type adminStats struct {
	now func() time.Time

	// http.admin.
	cxTotal       *stats.Counter
	cxDestroy     *stats.Counter
	cxHTTP1Total  *stats.Counter
	cxHTTP2Total  *stats.Counter
	cxActive      *stats.Gauge
	cxHTTP1Active *stats.Gauge
	cxHTTP2Active *stats.Gauge
	cxLengthMs    *stats.Histogram
	rqTotal       *stats.Counter
	rqHTTP1Total  *stats.Counter
	rqHTTP2Total  *stats.Counter
	rqCompleted   *stats.Counter
	rqActive      *stats.Gauge
	rqClass       [5]*stats.Counter
	rqTimeMs      *stats.Histogram

	// listener.admin.
	lnCxTotal      *stats.Counter
	lnCxDestroy    *stats.Counter
	lnCxActive     *stats.Gauge
	lnCxLengthMs   *stats.Histogram
	workerCxTotal  *stats.Counter
	workerCxActive *stats.Gauge
	lnRqClass      [5]*stats.Counter
	lnRqCompleted  *stats.Counter
	// lnGlobalCxOverflow counts the connections the global downstream
	// connection limit refused (admin_config.go).
	lnGlobalCxOverflow *stats.Counter

	mu    sync.Mutex
	conns map[net.Conn]*adminConn
}

// adminConn is one admin connection being counted.
type adminConn struct {
	start   time.Time
	counted bool         // StateNew was seen: the connection is in the gauges
	proto   atomic.Int32 // HTTP major version of its first request, 0 before
}

// adminConnKey keys the *adminConn in a request's context.
type adminConnKey struct{}

func newAdminStats(store *stats.Store, now func() time.Time) *adminStats {
	hs := store.Scope("http.admin.")
	ls := store.Scope("listener.admin.")
	lh := ls.Scope("http.admin.")
	lw := ls.Scope("main_thread.")
	a := &adminStats{
		now:                now,
		cxTotal:            hs.Counter("downstream_cx_total"),
		cxDestroy:          hs.Counter("downstream_cx_destroy"),
		cxHTTP1Total:       hs.Counter("downstream_cx_http1_total"),
		cxHTTP2Total:       hs.Counter("downstream_cx_http2_total"),
		cxActive:           hs.Gauge("downstream_cx_active"),
		cxHTTP1Active:      hs.Gauge("downstream_cx_http1_active"),
		cxHTTP2Active:      hs.Gauge("downstream_cx_http2_active"),
		cxLengthMs:         hs.Histogram("downstream_cx_length_ms", stats.UnitMilliseconds),
		rqTotal:            hs.Counter("downstream_rq_total"),
		rqHTTP1Total:       hs.Counter("downstream_rq_http1_total"),
		rqHTTP2Total:       hs.Counter("downstream_rq_http2_total"),
		rqCompleted:        hs.Counter("downstream_rq_completed"),
		rqActive:           hs.Gauge("downstream_rq_active"),
		rqTimeMs:           hs.Histogram("downstream_rq_time", stats.UnitMilliseconds),
		lnCxTotal:          ls.Counter("downstream_cx_total"),
		lnCxDestroy:        ls.Counter("downstream_cx_destroy"),
		lnCxActive:         ls.Gauge("downstream_cx_active"),
		lnCxLengthMs:       ls.Histogram("downstream_cx_length_ms", stats.UnitMilliseconds),
		workerCxTotal:      lw.Counter("downstream_cx_total"),
		workerCxActive:     lw.Gauge("downstream_cx_active"),
		lnRqCompleted:      lh.Counter("downstream_rq_completed"),
		lnGlobalCxOverflow: ls.Counter("downstream_global_cx_overflow"),
		conns:              map[net.Conn]*adminConn{},
	}
	for i := range a.rqClass {
		class := "downstream_rq_" + strconv.Itoa(i+1) + "xx"
		a.rqClass[i] = hs.Counter(class)
		a.lnRqClass[i] = lh.Counter(class)
	}
	return a
}

// connContext is the http.Server's ConnContext: it registers the
// connection and puts it in the context of its requests.
func (a *adminStats) connContext(ctx context.Context, c net.Conn) context.Context {
	ac := &adminConn{start: a.now()}
	a.mu.Lock()
	a.conns[c] = ac
	a.mu.Unlock()
	return context.WithValue(ctx, adminConnKey{}, ac)
}

// connState is the http.Server's ConnState: a new connection is counted
// active until it closes (or is hijacked, which takes it out of the
// server's hands).
func (a *adminStats) connState(c net.Conn, state http.ConnState) {
	switch state {
	case http.StateNew:
		a.mu.Lock()
		ac, ok := a.conns[c]
		if !ok {
			ac = &adminConn{start: a.now()}
			a.conns[c] = ac
		}
		ac.counted = true
		a.mu.Unlock()
		a.cxTotal.Inc()
		a.cxActive.Inc()
		a.lnCxTotal.Inc()
		a.lnCxActive.Inc()
		a.workerCxTotal.Inc()
		a.workerCxActive.Inc()
	case http.StateClosed, http.StateHijacked:
		a.mu.Lock()
		ac, ok := a.conns[c]
		delete(a.conns, c)
		a.mu.Unlock()
		if !ok || !ac.counted {
			return
		}
		a.cxActive.Dec()
		a.lnCxActive.Dec()
		a.workerCxActive.Dec()
		a.cxDestroy.Inc()
		a.lnCxDestroy.Inc()
		switch ac.proto.Load() {
		case 1:
			a.cxHTTP1Active.Dec()
		case 2:
			a.cxHTTP2Active.Dec()
		}
		ms := uint64(max(a.now().Sub(ac.start).Milliseconds(), 0))
		a.cxLengthMs.Record(ms)
		a.lnCxLengthMs.Record(ms)
	}
}

// wrap counts every request h serves: totals and active requests as it
// starts, the response code class and the time taken as it ends.
func (a *adminStats) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := a.now()
		a.rqTotal.Inc()
		a.rqActive.Inc()
		a.countProtocol(r)
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			a.rqActive.Dec()
			code := rec.status
			if code == 0 {
				code = http.StatusOK // what net/http sends for a handler that wrote nothing
			}
			if class := code / 100; class >= 1 && class <= 5 {
				a.rqClass[class-1].Inc()
				a.lnRqClass[class-1].Inc()
			}
			a.rqCompleted.Inc()
			a.lnRqCompleted.Inc()
			a.rqTimeMs.Record(uint64(max(a.now().Sub(start).Milliseconds(), 0)))
		}()
		h.ServeHTTP(rec, r)
	})
}

// countProtocol counts the request by HTTP version, and its connection
// by the version of its first request.
func (a *adminStats) countProtocol(r *http.Request) {
	major := int32(r.ProtoMajor)
	if major == 2 {
		a.rqHTTP2Total.Inc()
	} else {
		major = 1
		a.rqHTTP1Total.Inc()
	}
	ac, ok := r.Context().Value(adminConnKey{}).(*adminConn)
	if !ok || !ac.proto.CompareAndSwap(0, major) {
		return
	}
	if major == 2 {
		a.cxHTTP2Total.Inc()
		a.cxHTTP2Active.Inc()
	} else {
		a.cxHTTP1Total.Inc()
		a.cxHTTP1Active.Inc()
	}
}

// statusRecorder remembers the response status. It passes Flush through
// and unwraps for http.ResponseController, so streaming endpoints keep
// working through it.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

// WriteHeader records the final status; informational 1xx responses other
// than 101 come before the final one and are not it.
func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

// Write implies a 200 status when none was set.
func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Flush sends what was written so far.
func (s *statusRecorder) Flush() {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	_ = http.NewResponseController(s.ResponseWriter).Flush()
}

// Unwrap gives http.ResponseController the underlying writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
