package admin

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"google.golang.org/protobuf/types/known/durationpb"
)

// recorder lists the calls the fakes received, in order, as "Type.Method"
// with arguments, so tests can assert both effects and their absence.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) add(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, fmt.Sprintf(format, args...))
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.calls
	r.calls = nil
	return c
}

// fakes implements every source the admin needs, with realistic content.
type fakes struct {
	rec recorder

	state adminv3.ServerInfo_State
	info  *adminv3.ServerInfo

	memory *adminv3.Memory
	certs  *adminv3.Certificates

	layers    []string
	entries   []RuntimeEntry
	adminRT   bool
	modifyErr error

	loggers   []LoggerLevel
	fineGrain bool
	setErr    error
	reopenErr error

	onQuit func()
}

func newFakes() *fakes {
	return &fakes{
		state: adminv3.ServerInfo_LIVE,
		info: &adminv3.ServerInfo{
			Version:            "0123456789abcdef0123456789abcdef01234567/0.1.0/Clean/RELEASE/GoTLS",
			State:              adminv3.ServerInfo_LIVE,
			UptimeCurrentEpoch: durationpb.New(6e9),
			UptimeAllEpochs:    durationpb.New(6e9),
			HotRestartVersion:  "1.60.16384",
			CommandLineOptions: &adminv3.CommandLineOptions{
				Concurrency: 2,
				ConfigPath:  "/etc/proxy/bootstrap.yaml",
				LogLevel:    "info",
				DrainTime:   durationpb.New(600e9),
			},
			Node: &corev3.Node{Id: "node-1", Cluster: "demo", UserAgentName: "outrigger"},
		},
		memory: &adminv3.Memory{Allocated: 5217336, HeapSize: 8388608, TotalPhysicalBytes: 12582912},
		certs: &adminv3.Certificates{Certificates: []*adminv3.Certificate{
			{},
			{CertChain: []*adminv3.CertificateDetails{{
				Path:                "/etc/tls/server.crt",
				SerialNumber:        "1a2b",
				SubjectAltNames:     []*adminv3.SubjectAlternateName{{Name: &adminv3.SubjectAlternateName_Dns{Dns: "example.com"}}},
				DaysUntilExpiration: 89,
			}}},
		}},
		layers: []string{"static", "admin"},
		entries: []RuntimeEntry{
			{Key: "proxy.reloadable_features.admin_stats_filter_use_re2", LayerValues: []string{"true", ""}, FinalValue: "true"},
			{Key: "upstream.healthy_panic_threshold", LayerValues: []string{"50", "<25 & more>"}, FinalValue: "<25 & more>"},
		},
		adminRT: true,
		loggers: []LoggerLevel{
			{Name: "admin", Level: "info"},
			{Name: "config", Level: "info"},
			{Name: "http", Level: "warning"},
			{Name: "upstream", Level: "info"},
		},
	}
}

// options wires every fake, the logger and the profile path.
func (f *fakes) options(profilePath string, log logr.Logger) Options {
	return Options{
		Server:            fakeServer{f},
		Health:            fakeHealth{f},
		Quit:              fakeQuit{f},
		Memory:            fakeMemory{f},
		Certs:             fakeCerts{f},
		Runtime:           fakeRuntime{f},
		Logs:              fakeLogs{f},
		HotRestartVersion: "1.60.16384",
		ProfilePath:       profilePath,
		Log:               log,
	}
}

type fakeServer struct{ f *fakes }

func (s fakeServer) ServerInfo() *adminv3.ServerInfo {
	s.f.rec.add("Server.ServerInfo")
	return s.f.info
}

func (s fakeServer) State() adminv3.ServerInfo_State {
	s.f.rec.add("Server.State")
	return s.f.state
}

type fakeHealth struct{ f *fakes }

func (h fakeHealth) FailHealthChecks() { h.f.rec.add("Health.FailHealthChecks") }
func (h fakeHealth) PassHealthChecks() { h.f.rec.add("Health.PassHealthChecks") }

type fakeQuit struct{ f *fakes }

func (q fakeQuit) Quit() {
	q.f.rec.add("Quit.Quit")
	if q.f.onQuit != nil {
		q.f.onQuit()
	}
}

type fakeMemory struct{ f *fakes }

func (m fakeMemory) Memory() *adminv3.Memory {
	m.f.rec.add("Memory.Memory")
	return m.f.memory
}

type fakeCerts struct{ f *fakes }

func (c fakeCerts) Certificates() *adminv3.Certificates {
	c.f.rec.add("Certs.Certificates")
	return c.f.certs
}

type fakeRuntime struct{ f *fakes }

func (r fakeRuntime) LayerNames() []string {
	r.f.rec.add("Runtime.LayerNames")
	return r.f.layers
}

func (r fakeRuntime) Entries() []RuntimeEntry {
	r.f.rec.add("Runtime.Entries")
	return r.f.entries
}

func (r fakeRuntime) HasAdminLayer() bool {
	r.f.rec.add("Runtime.HasAdminLayer")
	return r.f.adminRT
}

func (r fakeRuntime) Modify(pairs map[string]string) error {
	keys := slices.Sorted(maps.Keys(pairs))
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%q", k, pairs[k])
	}
	r.f.rec.add("Runtime.Modify%s", b.String())
	return r.f.modifyErr
}

// fakeLogs applies level changes to its list, so that /logging's listing
// shows their effect, and refuses unknown names as the real registry does.
type fakeLogs struct{ f *fakes }

func (l fakeLogs) Loggers() []LoggerLevel {
	l.f.rec.add("Logs.Loggers")
	return slices.Clone(l.f.loggers)
}

func (l fakeLogs) FineGrain() bool {
	l.f.rec.add("Logs.FineGrain")
	return l.f.fineGrain
}

func (l fakeLogs) SetLevels(levels map[string]string) error {
	keys := slices.Sorted(maps.Keys(levels))
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%s", k, levels[k])
	}
	l.f.rec.add("Logs.SetLevels%s", b.String())
	if l.f.setErr != nil {
		return l.f.setErr
	}
	for i, lg := range l.f.loggers {
		if lv, ok := levels[lg.Name]; ok {
			l.f.loggers[i].Level = lv
		}
	}
	return nil
}

func (l fakeLogs) SetAllLevels(level string) error {
	l.f.rec.add("Logs.SetAllLevels %s", level)
	if l.f.setErr != nil {
		return l.f.setErr
	}
	for i := range l.f.loggers {
		l.f.loggers[i].Level = level
	}
	return nil
}

func (l fakeLogs) ReopenLogs() error {
	l.f.rec.add("Logs.ReopenLogs")
	return l.f.reopenErr
}

// logSink collects the admin's log lines.
type logSink struct {
	mu    sync.Mutex
	lines []string
}

func (s *logSink) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.lines = append(s.lines, args)
	}, funcr.Options{Verbosity: 1})
}

func (s *logSink) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.lines, "\n")
}

// testAdmin is an admin over fresh fakes.
type testAdmin struct {
	*Admin
	f    *fakes
	logs *logSink
}

func newTestAdmin(t *testing.T, configure ...func(*Options)) *testAdmin {
	t.Helper()
	f := newFakes()
	logs := &logSink{}
	o := f.options(filepath.Join(t.TempDir(), "proxy.prof"), logs.logger())
	for _, c := range configure {
		c(&o)
	}
	return &testAdmin{Admin: New(o), f: f, logs: logs}
}

// request describes one test request.
type request struct {
	method string
	target string
	body   string
	header http.Header
}

// serve runs req through the whole admin handler.
func serve(t *testing.T, h http.Handler, req request) *httptest.ResponseRecorder {
	t.Helper()
	method := req.method
	if method == "" {
		method = http.MethodGet
	}
	var body io.Reader
	if req.body != "" {
		body = strings.NewReader(req.body)
	}
	hr := httptest.NewRequest(method, req.target, body)
	hr.Host = "127.0.0.1:9901"
	for k, vs := range req.header {
		hr.Header[k] = vs
	}
	return serveHTTP(h, hr)
}

// serveHTTP runs a prepared request through h.
func serveHTTP(h http.Handler, hr *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, hr)
	return rec
}

// newLoopbackServer serves h on 127.0.0.1 until the test ends.
func newLoopbackServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h) // httptest listens on 127.0.0.1
	t.Cleanup(srv.Close)
	return srv
}

// formHeader is the header of a home-page form submission.
func formHeader() http.Header {
	return http.Header{"Content-Type": {formContentType}}
}

var errTest = errors.New("disk on fire")
