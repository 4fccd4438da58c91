package admin

import (
	"net/http"
	"strings"
)

// TapSource is the server's registry of tap filters configured with
// admin_config: /tap attaches a session to one of them.
type TapSource interface {
	// AttachTap starts the one admin tap session from a TapRequest body
	// (YAML or JSON). It fails with the message /tap answers with 400
	// (a session already attached, a bad body, an unknown config id).
	AttachTap(body []byte) (TapSession, error)
	// HasFilters reports whether a tap filter with admin_config is
	// configured now: /tap exists only then, as in Envoy, where the first
	// such filter adds the endpoint and the last one gone removes it.
	HasFilters() bool
}

// TapSession is an attached /tap session.
type TapSession interface {
	// Traces delivers each trace, rendered, until the session ends.
	Traces() <-chan []byte
	// Done is closed when the session ends on the server's side (its
	// last extension is gone): the response then completes.
	Done() <-chan struct{}
	// Detach ends the session: the filters stop tapping.
	Detach()
}

// tapRoutes is /tap, present only while the server has a tap filter with
// admin_config, as in Envoy.
func (a *Admin) tapRoutes() []Route {
	if a.opts.Tap == nil {
		return nil
	}
	return []Route{{
		Path:    "/tap",
		Help:    "tap filter control",
		Mutates: true,
		Handler: a.serveTap,
		Present: a.opts.Tap.HasFilters,
	}}
}

// serveTap keeps the response open and writes every trace of the session
// until the client goes away, which detaches it, or the session ends,
// which completes the response after the traces already queued.
func (a *Admin) serveTap(w *Response, r *Request) {
	if len(strings.TrimSpace(string(r.Body))) == 0 {
		w.Text(http.StatusBadRequest, "/tap requires a JSON/YAML body")
		return
	}
	sess, err := a.opts.Tap.AttachTap(r.Body)
	if err != nil {
		w.Text(http.StatusBadRequest, err.Error())
		return
	}
	defer sess.Detach()
	w.SetContentType(ContentTypeJSON)
	out := newStreamWriter(w, statsWriteTimeout)
	defer out.release()
	if !out.Flush() {
		return
	}
	traces := sess.Traces()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-sess.Done():
			for {
				select {
				case t := <-traces:
					if _, err := out.Write(t); err != nil || !out.Flush() {
						return
					}
				default:
					return
				}
			}
		case t, ok := <-traces:
			if !ok {
				return
			}
			if _, err := out.Write(t); err != nil || !out.Flush() {
				return
			}
		}
	}
}
