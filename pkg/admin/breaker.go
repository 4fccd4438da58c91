package admin

import "time"

// ContentTypeEventStream is the content type of the circuit-breaker
// dashboard stream.
const ContentTypeEventStream = "text/event-stream"

// breakerPingInterval is how often an idle stream gets a comment line, so
// that proxies and browsers in between do not close it while the
// dashboard waits for the next flush.
const breakerPingInterval = 3 * time.Second

// breakerPing is an event-stream comment: clients ignore it.
const breakerPing = ":\n\n"

// breakerStream serves the circuit-breaker dashboard stream.
type breakerStream struct {
	src          BreakerEventSource
	pingInterval time.Duration
	writeTimeout time.Duration
}

// breakerRoutes returns /breaker_event_stream and Envoy's path for it,
// /hystrix_event_stream, when a dashboard sink is configured.
func (a *Admin) breakerRoutes() []Route {
	if a.opts.Breakers == nil {
		return nil
	}
	b := &breakerStream{src: a.opts.Breakers, pingInterval: breakerPingInterval, writeTimeout: statsWriteTimeout}
	return b.routes()
}

// routes is the stream under both its paths.
func (b *breakerStream) routes() []Route {
	return []Route{
		{
			Path:    "/breaker_event_stream",
			Help:    "send circuit-breaker dashboard event stream",
			Handler: b.serve,
		},
		{
			Path:    "/hystrix_event_stream",
			Help:    "send hystrix event stream (same as /breaker_event_stream)",
			Handler: b.serve,
		},
	}
}

// serve streams until the client goes away: one event set per stats flush,
// as the source delivers it, and a ping every pingInterval. The
// headers are Envoy's, so that a dashboard on another origin can read the
// stream. Leaving unsubscribes, which frees everything the stream held.
func (b *breakerStream) serve(w *Response, r *Request) {
	events, cancel := b.src.SubscribeBreakerEvents()
	defer cancel()

	h := w.Header()
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "close")
	h.Set("Access-Control-Allow-Headers", "Accept, Cache-Control, X-Requested-With, Last-Event-ID")
	h.Set("Access-Control-Allow-Origin", "*")
	w.SetContentType(ContentTypeEventStream)

	out := newStreamWriter(w, b.writeTimeout)
	defer out.release()
	// The headers go out at once: the dashboard shows the stream as open
	// before the first flush.
	if !out.Flush() {
		return
	}
	ping := time.NewTicker(b.pingInterval)
	defer ping.Stop()
	for {
		var msg []byte
		select {
		case <-r.Context().Done():
			return
		case ev, ok := <-events:
			if !ok {
				return // the source closed: the server is stopping
			}
			msg = ev
		case <-ping.C:
			msg = []byte(breakerPing)
		}
		if _, err := out.Write(msg); err != nil || !out.Flush() {
			return
		}
	}
}
