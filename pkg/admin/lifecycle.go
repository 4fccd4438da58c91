package admin

import "net/http"

// lifecycleRoutes serves the mutations of the server's lifecycle:
// /healthcheck/fail and /healthcheck/ok (with a HealthControl) and
// /quitquitquit (with a Quitter).
func (a *Admin) lifecycleRoutes() []Route {
	var routes []Route
	if h := a.opts.Health; h != nil {
		routes = append(routes,
			Route{
				Path:    "/healthcheck/fail",
				Help:    "cause the server to fail health checks",
				Mutates: true,
				Handler: func(w *Response, _ *Request) {
					h.FailHealthChecks()
					w.Text(http.StatusOK, "OK\n")
				},
			},
			Route{
				Path:    "/healthcheck/ok",
				Help:    "cause the server to pass health checks",
				Mutates: true,
				Handler: func(w *Response, _ *Request) {
					h.PassHealthChecks()
					w.Text(http.StatusOK, "OK\n")
				},
			},
		)
	}
	if q := a.opts.Quit; q != nil {
		routes = append(routes, Route{
			Path:    "/quitquitquit",
			Help:    "exit the server",
			Mutates: true,
			Handler: func(w *Response, _ *Request) {
				// The answer goes out, complete, before the shutdown starts:
				// the connection may be closed before the handler returns.
				w.Header().Set("Connection", "close")
				w.Text(http.StatusOK, "OK\n")
				w.Flush()
				q.Quit()
			},
		})
	}
	return routes
}
