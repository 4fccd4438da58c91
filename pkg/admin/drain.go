package admin

import "net/http"

// drainRoutes serves /drain_listeners.
func (a *Admin) drainRoutes() []Route {
	if a.opts.Drain == nil {
		return nil
	}
	return []Route{{
		Path: "/drain_listeners",
		Help: "drain listeners",
		Params: []Param{
			{Name: "graceful", Kind: ParamFlag, Help: "When draining listeners, enter a graceful drain period prior to closing " +
				"listeners. This behaviour and duration is configurable via server options or CLI"},
			{Name: "skip_exit", Kind: ParamFlag, Help: "When draining listeners, do not exit after the drain period. " +
				"This must be used with graceful"},
			{Name: "inboundonly", Kind: ParamFlag, Help: "Drains all inbound listeners. traffic_direction field in " +
				"config.listener.v3.Listener is used to determine whether a listener is inbound or outbound."},
		},
		Mutates: true,
		Handler: a.handleDrainListeners,
	}}
}

// handleDrainListeners starts draining the selected listeners and answers
// at once, without waiting for the drain sequence. The parameters are
// presence flags (?graceful=false still drains gracefully). The server
// refuses combinations it cannot honour (skip_exit without graceful): that
// is the client's mistake, answered 400 with the reason.
func (a *Admin) handleDrainListeners(w *Response, r *Request) {
	err := a.opts.Drain.DrainListeners(DrainOptions{
		InboundOnly: r.Params.Has("inboundonly"),
		Graceful:    r.Params.Has("graceful"),
		SkipExit:    r.Params.Has("skip_exit"),
	})
	if err != nil {
		w.Text(http.StatusBadRequest, err.Error()+"\n")
		return
	}
	w.Text(http.StatusOK, "OK\n")
}
