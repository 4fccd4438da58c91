// Package admintest is a fake proxy admin interface for tests: the
// endpoints the controller calls, with the proxy's state behind them, on a
// loopback address, recording every call.
package admintest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Call is one request the server answered.
type Call struct {
	Method, Path, Query string
}

// Server is a fake admin interface. Its state starts as a fresh proxy's:
// LIVE, health checks passing, no runtime overrides, every logger at info.
type Server struct {
	addr string

	mu        sync.Mutex
	ln        net.Listener
	srv       *http.Server
	started   time.Time
	now       func() time.Time
	static    map[string]string
	admin     map[string]string
	loggers   map[string]string
	hcFailed  bool
	drains    []string
	quit      bool
	active    int64
	calls     []Call
	failPaths map[string]int
}

// defaultLoggers are the logger names of a fresh fake proxy.
var defaultLoggers = []string{"admin", "config", "connection", "http", "main", "runtime", "upstream"}

// New listens on addr ("127.0.0.1:0" for any port) and serves until Close.
// static is the proxy's static runtime layer.
func New(addr string, static map[string]string) (*Server, error) {
	s := &Server{
		now:       time.Now,
		static:    clone(static),
		failPaths: map[string]int{},
	}
	s.reset()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admintest: listen %s: %w", addr, err)
	}
	s.addr = ln.Addr().String()
	s.serve(ln)
	return s, nil
}

// clone copies m.
func clone(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// reset gives the proxy a fresh process's state.
func (s *Server) reset() {
	s.started = s.now()
	s.admin = map[string]string{}
	s.loggers = map[string]string{}
	for _, l := range defaultLoggers {
		s.loggers[l] = "info"
	}
	s.hcFailed = false
	s.quit = false
}

// serve answers on ln; s.mu must not be held.
func (s *Server) serve(ln net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(s.handle), ReadHeaderTimeout: 10 * time.Second}
	s.mu.Lock()
	s.ln, s.srv = ln, srv
	s.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// Addr is the host:port the server listens on.
func (s *Server) Addr() string { return s.addr }

// IP is the address's host.
func (s *Server) IP() string {
	host, _, _ := net.SplitHostPort(s.addr)
	return host
}

// Port is the address's port.
func (s *Server) Port() int32 {
	_, port, _ := net.SplitHostPort(s.addr)
	n, _ := strconv.Atoi(port)
	return int32(n)
}

// Close stops the server.
func (s *Server) Close() {
	s.mu.Lock()
	srv := s.srv
	s.srv, s.ln = nil, nil
	s.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// Stop closes the listener, so that connections are refused, as when the
// proxy is down.
func (s *Server) Stop() { s.Close() }

// Start listens again on the same address after Stop.
func (s *Server) Start() error {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("admintest: listen %s: %w", s.addr, err)
	}
	s.serve(ln)
	return nil
}

// Restart is a proxy restart: the admin layer, log levels and health-check
// state are lost, and the uptime starts again. backdate moves the new start
// into the past (a fresh process has not been up for long, but tests may
// need the restart to be told apart from the previous start at once).
func (s *Server) Restart(backdate time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reset()
	s.started = s.started.Add(-backdate)
}

// Backdate moves the current process's start into the past by d.
func (s *Server) Backdate(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started = s.started.Add(-d)
}

// SetActiveConnections sets the downstream connections /stats reports.
func (s *Server) SetActiveConnections(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active = n
}

// FailNext makes the next n calls to path answer 500.
func (s *Server) FailNext(path string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failPaths[path] = n
}

// SetAdminRuntime sets a key in the admin layer, as another client would.
func (s *Server) SetAdminRuntime(key, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.admin[key] = value
}

// Calls returns the calls made to path ("" for all), in order.
func (s *Server) Calls(path string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if path == "" || c.Path == path {
			out = append(out, c)
		}
	}
	return out
}

// RuntimeValue is the final value of key and whether it has one.
func (s *Server) RuntimeValue(key string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.admin[key]; ok {
		return v, true
	}
	v, ok := s.static[key]
	return v, ok
}

// AdminRuntime copies the admin layer.
func (s *Server) AdminRuntime() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return clone(s.admin)
}

// LogLevel is a logger's level.
func (s *Server) LogLevel(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loggers[name]
}

// HealthChecksFailed reports whether /healthcheck/fail is in effect.
func (s *Server) HealthChecksFailed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hcFailed
}

// Drains are the queries of the /drain_listeners calls.
func (s *Server) Drains() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.drains)
}

// mutations are the endpoints that need POST.
var mutations = []string{"/runtime_modify", "/logging", "/healthcheck/fail", "/healthcheck/ok", "/drain_listeners", "/quitquitquit"}

// handle answers one request.
func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.calls = append(s.calls, Call{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery})
	if n := s.failPaths[r.URL.Path]; n > 0 {
		s.failPaths[r.URL.Path] = n - 1
		s.mu.Unlock()
		http.Error(w, "injected failure", http.StatusInternalServerError)
		return
	}
	if slices.Contains(mutations, r.URL.Path) && r.Method != http.MethodPost {
		s.mu.Unlock()
		http.Error(w, "Method "+r.Method+" not allowed, POST required.", http.StatusBadRequest)
		return
	}
	code, contentType, body, after := s.answer(r)
	s.mu.Unlock()
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(code)
	_, _ = w.Write([]byte(body))
	if after != nil {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		go after()
	}
}

// answer computes the answer with s.mu held; after, if set, runs once the
// answer is out.
func (s *Server) answer(r *http.Request) (code int, contentType, body string, after func()) {
	const text, jsonType = "text/plain; charset=UTF-8", "application/json"
	q := r.URL.Query()
	switch r.URL.Path {
	case "/server_info":
		state := "LIVE"
		if s.hcFailed {
			state = "DRAINING"
		}
		up := int64(s.now().Sub(s.started) / time.Second)
		return http.StatusOK, jsonType, fmt.Sprintf("{\n \"state\": %q,\n \"uptime_current_epoch\": \"%ds\"\n}\n", state, up), nil
	case "/runtime":
		return http.StatusOK, jsonType, s.runtimeJSON(), nil
	case "/runtime_modify":
		if len(q) == 0 {
			return http.StatusBadRequest, text, "usage: /runtime_modify?key1=value1&key2=value2&keyN=valueN", nil
		}
		for k := range q {
			if v := q.Get(k); v == "" {
				delete(s.admin, k)
			} else {
				s.admin[k] = v
			}
		}
		return http.StatusOK, text, "OK\n", nil
	case "/logging":
		if err := s.setLevels(q); err != nil {
			return http.StatusBadRequest, text, "error: " + err.Error() + "\n\n" + s.loggerList(), nil
		}
		return http.StatusOK, text, s.loggerList(), nil
	case "/healthcheck/fail":
		s.hcFailed = true
		return http.StatusOK, text, "OK\n", nil
	case "/healthcheck/ok":
		s.hcFailed = false
		return http.StatusOK, text, "OK\n", nil
	case "/drain_listeners":
		s.drains = append(s.drains, r.URL.RawQuery)
		return http.StatusOK, text, "OK\n", nil
	case "/quitquitquit":
		s.quit = true
		return http.StatusOK, text, "OK\n", s.Stop
	case "/stats":
		if q.Get("format") != "json" {
			return http.StatusBadRequest, text, "only format=json is faked", nil
		}
		return http.StatusOK, jsonType, fmt.Sprintf(
			`{"stats":[{"name":"listener.0.0.0.0_8080.downstream_cx_active","value":%d},{"name":"listener.0.0.0.0_8080.worker_0.downstream_cx_active","value":%d},{"name":"listener.admin.downstream_cx_active","value":1}]}`,
			s.active, s.active), nil
	default:
		return http.StatusNotFound, text, "invalid path. admin commands are: ...\n", nil
	}
}

// runtimeJSON renders /runtime with the layers static and admin.
func (s *Server) runtimeJSON() string {
	type entry struct {
		LayerValues []string `json:"layer_values"`
		FinalValue  string   `json:"final_value"`
	}
	entries := map[string]entry{}
	for k, v := range s.static {
		entries[k] = entry{LayerValues: []string{v, ""}, FinalValue: v}
	}
	for k, v := range s.admin {
		e := entries[k]
		if e.LayerValues == nil {
			e.LayerValues = []string{"", ""}
		}
		e.LayerValues[1] = v
		e.FinalValue = v
		entries[k] = e
	}
	out, _ := json.MarshalIndent(map[string]any{"layers": []string{"static", "admin"}, "entries": entries}, "", " ")
	return string(out) + "\n"
}

// levels are the level names /logging accepts.
var levels = []string{"trace", "debug", "info", "warning", "error", "critical", "off"}

// setLevels applies a /logging request: level=, paths= or <name>=<level>.
func (s *Server) setLevels(q map[string][]string) error {
	for k, vs := range q {
		v := vs[0]
		switch k {
		case "level":
			if !slices.Contains(levels, v) {
				return errors.New("unknown logger level")
			}
			for name := range s.loggers {
				s.loggers[name] = v
			}
		case "paths":
			for item := range strings.SplitSeq(v, ",") {
				name, level, ok := strings.Cut(item, ":")
				if !ok || !slices.Contains(levels, level) {
					return errors.New("unknown logger level")
				}
				if _, known := s.loggers[name]; !known {
					return errors.New("unknown logger name")
				}
				s.loggers[name] = level
			}
		default:
			if _, known := s.loggers[k]; !known {
				return errors.New("unknown logger name")
			}
			if !slices.Contains(levels, v) {
				return errors.New("unknown logger level")
			}
			s.loggers[k] = v
		}
	}
	return nil
}

// loggerList prints the loggers as /logging does.
func (s *Server) loggerList() string {
	names := make([]string, 0, len(s.loggers))
	for n := range s.loggers {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("active loggers:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "  %s: %s\n", n, s.loggers[n])
	}
	b.WriteString("\n")
	return b.String()
}
