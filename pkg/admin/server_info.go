package admin

import (
	"net/http"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
)

// serverInfoRoutes serves the server's identity and state: /server_info and
// /ready (when a ServerInfoSource is wired) and /hot_restart_version.
func (a *Admin) serverInfoRoutes() []Route {
	routes := []Route{{
		Path:    "/hot_restart_version",
		Help:    "print the hot restart compatibility version",
		Handler: a.handleHotRestartVersion,
	}}
	if a.opts.Server == nil {
		return routes
	}
	return append(routes,
		Route{
			Path:    "/server_info",
			Help:    "print server version/status information",
			Handler: a.handleServerInfo,
		},
		Route{
			Path:    "/ready",
			Help:    "print server state, return 200 if LIVE, otherwise return 503",
			Handler: a.handleReady,
		},
	)
}

// handleServerInfo answers the ServerInfo message, zero values included.
func (a *Admin) handleServerInfo(w *Response, _ *Request) {
	info := a.opts.Server.ServerInfo()
	if info == nil {
		info = &adminv3.ServerInfo{}
	}
	w.Proto(info, true)
}

// handleReady is the readiness probe: the state name, 200 only when LIVE.
func (a *Admin) handleReady(w *Response, _ *Request) {
	state := a.opts.Server.State()
	code := http.StatusServiceUnavailable
	if state == adminv3.ServerInfo_LIVE {
		code = http.StatusOK
	}
	w.Text(code, state.String()+"\n")
}

// handleHotRestartVersion answers the version string with no newline, as
// Envoy does, so scripts can compare it with --hot-restart-version's output.
func (a *Admin) handleHotRestartVersion(w *Response, _ *Request) {
	w.Text(http.StatusOK, a.opts.HotRestartVersion)
}
