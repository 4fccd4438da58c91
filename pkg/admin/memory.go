package admin

import adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"

// memoryRoutes serves /memory. It answers any method: the newer build of the
// specification uses GET, the older one POST, and both are served.
func (a *Admin) memoryRoutes() []Route {
	if a.opts.Memory == nil {
		return nil
	}
	return []Route{{
		Path:    "/memory",
		Help:    "print current allocation/heap usage",
		Handler: a.handleMemory,
	}}
}

// handleMemory answers the Memory message, zero values included.
func (a *Admin) handleMemory(w *Response, _ *Request) {
	m := a.opts.Memory.Memory()
	if m == nil {
		m = &adminv3.Memory{}
	}
	w.Proto(m, true)
}
