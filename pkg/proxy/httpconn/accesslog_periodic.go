package httpconn

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	datav3 "github.com/envoyproxy/go-control-plane/envoy/data/accesslog/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/loggers"
)

// periodicLog logs a stream every access_log_flush_interval while it is
// active (DownstreamPeriodic entries), as Envoy's per-stream flush timer
// does. It exists only when the interval is set, and then arms one runtime
// timer per active stream: Go keeps timers in per-processor heaps, so that
// costs less than a manager-wide ticker, which would need a shared set of
// active streams locked at every stream's start and end.
//
// The timer fires on its own goroutine while the stream's goroutine may be
// blocked in a read, so it never reads the stream: the stream publishes
// what the entry shows (a copy of its entry and headers, taken under mu, at
// the request's decoding and at the response head; its byte counts, as
// atomics, as bodies and tunnels move).
type periodicLog struct {
	m *Manager
	// logs log the entries, of type typ: the connection manager's
	// (DownstreamPeriodic), or the router's upstream logs
	// (UpstreamPeriodic, see uplog.go).
	logs *loggers.List
	typ  datav3.AccessLogType
	// sent and recv are the stream's body bytes so far.
	sent, recv atomic.Uint64

	mu sync.Mutex
	// gen identifies the armed timer: a timer of an earlier request (an
	// HTTP/1 stream is reused) that fires late finds it changed.
	gen   uint64
	timer *time.Timer
	// entry is the stream's entry as last published, over req and resp:
	// copies that the stream's later edits do not touch.
	entry     accesslog.Entry
	req, resp headerList
	buf       []byte
}

// startPeriodicLog arms the stream's periodic entries: the first one an
// interval after its request headers were decoded.
func (s *stream) startPeriodicLog() {
	p := s.plog
	if p == nil {
		p = &periodicLog{m: s.m, logs: &s.m.logs, typ: datav3.AccessLogType_DownstreamPeriodic}
		s.plog = p
	}
	s.plogArmed = true
	s.publishLog()
	s.logSent()
	s.logRecv()
	p.arm(s.m.cfg.logOpts.flushInterval)
}

// arm (re)starts p's entries: the first an interval from now.
func (p *periodicLog) arm(every time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gen++
	gen := p.gen
	p.timer = time.AfterFunc(every, func() { p.fire(gen, every) })
}

// disarm stops p's entries; a timer firing meanwhile logs nothing.
func (p *periodicLog) disarm() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gen++
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
}

// stopPeriodicLog disarms the periodic entries once the stream ends, before
// its final entry; a timer firing meanwhile logs nothing.
func (s *stream) stopPeriodicLog() {
	if !s.plogArmed {
		return
	}
	s.plogArmed = false
	s.plog.disarm()
}

// publishLog gives the periodic entries the stream's state now. It runs on
// the stream's goroutine.
func (s *stream) publishLog() {
	if !s.plogArmed {
		return
	}
	p := s.plog
	p.mu.Lock()
	defer p.mu.Unlock()
	e := &p.entry
	*e = s.entry
	// The byte counts are left to logSent and logRecv: an HTTP/2
	// upstream's transport may be reading the request body meanwhile.
	e.ResponseCode, e.ResponseCodeDetails, e.ResponseFlags = s.status, s.details, s.flags
	detachStrings(e)
	p.req.copyOf(&s.reqHeaders)
	e.RequestHeaders = &p.req
	e.ResponseHeaders = nil
	if s.started {
		p.resp.copyOf(&s.respHeaders)
		e.ResponseHeaders = &p.resp
	}
	// Trailers come with the response's end, which logs the final
	// entry instead.
	e.ResponseTrailers = nil
}

// logSent gives the periodic entries the stream's count of bytes sent.
func (s *stream) logSent() {
	if p := s.plog; p != nil {
		p.sent.Store(s.bytesSent)
	}
}

// logRecv gives the periodic entries the stream's count of bytes
// received; it runs where they are counted, on the goroutine that reads
// an HTTP/2 upstream request's body too.
func (s *stream) logRecv() {
	if p := s.plog; p != nil {
		p.recv.Store(s.bytesRecv)
	}
}

// fire logs the periodic entry of the timer gen and rearms it.
func (p *periodicLog) fire(gen uint64, every time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if gen != p.gen {
		return
	}
	e := p.entry
	e.Type = p.typ
	e.BytesSent, e.BytesReceived = p.sent.Load(), p.recv.Load()
	e.Duration = p.m.stamp(time.Now()).Sub(e.StartTime)
	var err error
	if p.buf, err = p.logs.Log(p.buf, &e); err != nil {
		p.m.log.V(1).Info("access log write failed", "error", err.Error())
	}
	p.timer.Reset(every)
}

// detachStrings replaces e's strings by copies: some view buffers the
// stream rewrites (an upstream attempt's local address), which the
// periodic entries must not see change under them.
func detachStrings(e *accesslog.Entry) {
	for _, s := range []*string{
		&e.Method, &e.Path, &e.Authority, &e.Scheme, &e.ResponseCodeDetails,
		&e.UpstreamHost, &e.UpstreamCluster, &e.UpstreamLocalAddress, &e.UpstreamTransportFailureReason,
		&e.RequestedServerName, &e.RouteName, &e.LocalReplyBody,
	} {
		*s = strings.Clone(*s)
	}
}

// copyOf makes h a copy of src, strings included.
func (h *headerList) copyOf(src *headerList) {
	h.reset()
	for _, f := range src.fields {
		h.fields = append(h.fields, field{name: strings.Clone(f.name), value: strings.Clone(f.value)})
		h.adds++
	}
}
