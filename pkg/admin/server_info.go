package admin

import (
	"bytes"
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
	b, err := MarshalProto(info, true)
	if err != nil {
		w.Fail(err)
		return
	}
	w.SetContentType(ContentTypeJSON)
	_, _ = w.Write(withHotRestartVersionOption(b))
}

// serviceClusterMember opens command_line_options.service_cluster in the
// indented JSON of /server_info; hotRestartVersionMember goes before it.
const (
	serviceClusterMember    = "\n  \"service_cluster\":"
	hotRestartVersionMember = "\n  \"hot_restart_version\": false,"
)

// withHotRestartVersionOption adds command_line_options.hot_restart_version,
// the boolean the admin specification lists between log_path and
// service_cluster, which the v3 CommandLineOptions message has no field for.
// It is whether --hot-restart-version was given: that option prints the
// version and exits, so a serving process always reports false.
func withHotRestartVersionOption(b []byte) []byte {
	i := bytes.Index(b, []byte(serviceClusterMember))
	if i < 0 {
		return b
	}
	out := make([]byte, 0, len(b)+len(hotRestartVersionMember))
	out = append(out, b[:i]...)
	out = append(out, hotRestartVersionMember...)
	return append(out, b[i:]...)
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
