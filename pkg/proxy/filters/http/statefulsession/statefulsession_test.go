package statefulsession

import (
	"encoding/base64"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	ssv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/stateful_session/v3"
	headerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/header/v3"
	"github.com/go-logr/logr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/sessionstate"
	sessionheader "github.com/outrigger-dev/outrigger/pkg/proxy/sessionstate/header"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

func filterContext(t *testing.T, st *stats.Store) httpfilter.Context {
	t.Helper()
	r, err := extension.New(extension.Of(sessionheader.Name, sessionstate.Category, &headerv3.HeaderBasedSessionState{}, sessionheader.Factory{}))
	if err != nil {
		t.Fatal(err)
	}
	return httpfilter.Context{Name: "ss", Stats: st, StatPrefix: "http.in.", Log: logr.Discard(), Extensions: r, LookupByName: true}
}

func headerState(t *testing.T, name string) *corev3.TypedExtensionConfig {
	t.Helper()
	a, err := anypb.New(&headerv3.HeaderBasedSessionState{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return &corev3.TypedExtensionConfig{Name: "envoy.http.stateful_session.header", TypedConfig: a}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// run runs the filter on one request whose session header is sess ("" for
// none), served by host ("" when none was picked); it returns the stream.
func run(t *testing.T, cfg httpfilter.Config, sess, host string, perRoute ...httpfilter.RouteConfig) *httpfiltertest.Stream {
	t.Helper()
	var hdrs []string
	if sess != "" {
		hdrs = []string{"x-session", b64(sess)}
	}
	s := httpfiltertest.NewStream("GET", "/", hdrs...)
	if len(perRoute) > 0 {
		s.PerRoute = map[string][]httpfilter.RouteConfig{"ss": perRoute}
	}
	f := cfg.NewFilter()
	if f.(httpfilter.Decoder).DecodeHeaders(s) != httpfilter.Continue {
		t.Fatal("DecodeHeaders stopped")
	}
	s.StreamInfo.UpstreamHost = host
	f.(httpfilter.Encoder).EncodeHeaders(s)
	f.(httpfilter.Destroyer).OnDestroy()
	return s
}

func TestFilter(t *testing.T) {
	st := stats.NewStore()
	ctx := filterContext(t, st)
	cfg, err := Factory{}.Compile(&ssv3.StatefulSession{SessionState: headerState(t, "x-session"), Strict: true, StatPrefix: "p", StatusOnStrictDestinationNotFound: 404}, ctx)
	if err != nil {
		t.Fatal(err)
	}
	counter := func(name string) uint64 { return st.Counter("http.in.stateful_session.p." + name).Value() }

	// No session: balanced, and the response names the host.
	s := run(t, cfg, "", "10.0.0.1:80")
	if s.OverrideHost != (upstream.OverrideHost{}) {
		t.Errorf("override without a session: %+v", s.OverrideHost)
	}
	if v, _ := s.RespHeaders.Get("x-session"); v != b64("10.0.0.1:80") {
		t.Errorf("x-session %q", v)
	}

	// The session's host served it: nothing to say, counted as routed.
	s = run(t, cfg, "10.0.0.1:80", "10.0.0.1:80")
	if want := (upstream.OverrideHost{Address: "10.0.0.1:80", Strict: true, MissingStatus: 404}); s.OverrideHost != want {
		t.Errorf("override %+v, want %+v", s.OverrideHost, want)
	}
	if _, ok := s.RespHeaders.Get("x-session"); ok {
		t.Error("the same host named again")
	}
	// No host picked for a strict session: failed closed.
	run(t, cfg, "10.0.0.9:80", "")
	if r, fc, fo := counter("routed"), counter("failed_closed"), counter("failed_open"); r != 1 || fc != 1 || fo != 0 {
		t.Errorf("routed %d, failed_closed %d, failed_open %d", r, fc, fo)
	}

	// A route disables the filter, or replaces its settings (without
	// stats, as in Envoy).
	off, err := Factory{}.CompileRoute(&ssv3.StatefulSessionPerRoute{Override: &ssv3.StatefulSessionPerRoute_Disabled{Disabled: true}}, ctx)
	if err != nil {
		t.Fatal(err)
	}
	s = run(t, cfg, "10.0.0.1:80", "10.0.0.2:80", off)
	if s.OverrideHost != (upstream.OverrideHost{}) || s.RespHeaders.Len() != 0 {
		t.Errorf("disabled route: override %+v, response %d headers", s.OverrideHost, s.RespHeaders.Len())
	}
	other, err := Factory{}.CompileRoute(&ssv3.StatefulSessionPerRoute{Override: &ssv3.StatefulSessionPerRoute_StatefulSession{
		StatefulSession: &ssv3.StatefulSession{SessionState: headerState(t, "x-session"), StatPrefix: "route"},
	}}, ctx)
	if err != nil {
		t.Fatal(err)
	}
	s = run(t, cfg, "10.0.0.1:80", "10.0.0.2:80", other)
	if want := (upstream.OverrideHost{Address: "10.0.0.1:80"}); s.OverrideHost != want {
		t.Errorf("route's settings: override %+v, want %+v", s.OverrideHost, want)
	}
	if v, _ := s.RespHeaders.Get("x-session"); v != b64("10.0.0.2:80") {
		t.Errorf("route's settings: x-session %q", v)
	}
	for _, name := range st.CounterNames() {
		if strings.Contains(name, "stateful_session.route.") {
			t.Errorf("a route's settings made stat %s", name)
		}
	}
}

func TestFilterFailedOpen(t *testing.T) {
	st := stats.NewStore()
	cfg, err := Factory{}.Compile(&ssv3.StatefulSession{SessionState: headerState(t, "x-session"), StatPrefix: "p"}, filterContext(t, st))
	if err != nil {
		t.Fatal(err)
	}
	run(t, cfg, "10.0.0.1:80", "10.0.0.2:80")
	if got := st.Counter("http.in.stateful_session.p.failed_open").Value(); got != 1 {
		t.Errorf("failed_open %d", got)
	}
}

func TestCompileErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		config proto.Message
		want   string
	}{
		"session state of another category": {
			config: &ssv3.StatefulSession{SessionState: &corev3.TypedExtensionConfig{Name: "x", TypedConfig: mustAny(t, &ssv3.StatefulSession{})}},
			want:   "session_state.",
		},
		"bad session state": {
			config: &ssv3.StatefulSession{SessionState: headerState(t, "")},
			want:   "session_state.typed_config.name: must not be empty",
		},
		"bad status": {
			config: &ssv3.StatefulSession{Strict: true, StatusOnStrictDestinationNotFound: 42},
			want:   "status_on_strict_destination_not_found:",
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Factory{}.Compile(tc.config, filterContext(t, stats.NewStore()))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %v, want prefix %q", err, tc.want)
			}
		})
	}
}

func mustAny(t *testing.T, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
