package apikeyauth

import (
	"strings"
	"testing"

	apikeyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/api_key_auth/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// parse reads y into m, as a configuration's YAML would.
func parse[M proto.Message](t *testing.T, y string, m M) M {
	t.Helper()
	return httpfiltertest.ParseYAML(t, y, m)
}

const config = `{credentials: [{key: k1, client: alice}, {key: k2, client: bob}],
  key_sources: [{header: X-Api-Key}, {query: api_key}, {cookie: apikey}],
  forwarding: {header: x-client, hide_credentials: true}}`

func TestDecodeHeaders(t *testing.T) {
	route := parse(t, `{allowed_clients: [bob]}`, &apikeyv3.ApiKeyAuthPerRoute{})
	routeCreds := parse(t, `{credentials: [{key: k3, client: carol}], key_sources: [{header: authorization}]}`, &apikeyv3.ApiKeyAuthPerRoute{})
	for _, tc := range []struct {
		name      string
		path      string
		headers   []string
		perRoute  proto.Message
		status    int // 0: let through
		details   string
		wantPath  string
		wantClint string
		gone      []string // request headers removed
		cookie    string   // the cookie header left, when one was sent
	}{
		{name: "header", path: "/", headers: []string{"x-api-key", "k1"}, wantPath: "/", wantClint: "alice", gone: []string{"x-api-key"}},
		{name: "bearer prefix dropped", path: "/", headers: []string{"x-api-key", "Bearer k2"}, wantPath: "/", wantClint: "bob"},
		{name: "query decoded, removed, others kept", path: "/p?a=1&api%5Fkey=k%32&b=2", wantPath: "/p?a=1&b=2", wantClint: "bob"},
		{name: "query alone removed", path: "/p?api_key=k1", wantPath: "/p", wantClint: "alice"},
		{name: "cookie", path: "/", headers: []string{"cookie", "a=1; apikey=k1; b=2"}, wantPath: "/", wantClint: "alice", cookie: "a=1; b=2"},
		{name: "empty header falls to the next source", path: "/?api_key=k1", headers: []string{"x-api-key", ""}, wantPath: "/", wantClint: "alice"},
		{name: "missing", path: "/", status: 401, details: "missing_api_key"},
		{name: "unknown", path: "/", headers: []string{"x-api-key", "nope"}, status: 401, details: "unkonwn_api_key"},
		{name: "client not allowed", path: "/", headers: []string{"x-api-key", "k1"}, perRoute: route, status: 403, details: "client_not_allowed"},
		{name: "client allowed", path: "/", headers: []string{"x-api-key", "k2"}, perRoute: route, wantPath: "/", wantClint: "bob"},
		{name: "route credentials and sources replace", path: "/", headers: []string{"authorization", "Bearer k3"}, perRoute: routeCreds, wantPath: "/", wantClint: "carol", gone: []string{"authorization"}},
		{name: "route sources replace the filter's", path: "/", headers: []string{"x-api-key", "k3"}, perRoute: routeCreds, status: 401, details: "missing_api_key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := stats.NewStore()
			ctx := httpfilter.Context{Name: "auth", Stats: st, StatPrefix: "http.t."}
			cfg, err := Factory{}.Compile(parse(t, config, &apikeyv3.ApiKeyAuth{}), ctx)
			if err != nil {
				t.Fatal(err)
			}
			s := httpfiltertest.NewStream("GET", tc.path, tc.headers...)
			if tc.perRoute != nil {
				rc, err := Factory{}.CompileRoute(tc.perRoute, ctx)
				if err != nil {
					t.Fatal(err)
				}
				s.PerRoute = map[string][]httpfilter.RouteConfig{"auth": {rc}}
			}
			got := cfg.NewFilter().(httpfilter.Decoder).DecodeHeaders(s)
			if tc.status != 0 {
				if got != httpfilter.Stop || s.Reply == nil || s.Reply.Status != tc.status || s.Reply.Details != tc.details {
					t.Fatalf("got %v %+v, want %d %s", got, s.Reply, tc.status, tc.details)
				}
				want := map[int]string{401: "Client authentication failed.", 403: "Client is forbidden."}[tc.status]
				if s.Reply.Body != want {
					t.Errorf("body %q, want %q", s.Reply.Body, want)
				}
				name := map[int]string{401: "unauthorized", 403: "forbidden"}[tc.status]
				if v := st.Counter("http.t.api_key_auth." + name).Value(); v != 1 {
					t.Errorf("%s = %d", name, v)
				}
				return
			}
			if got != httpfilter.Continue || s.Reply != nil {
				t.Fatalf("got %v %+v, want continue", got, s.Reply)
			}
			if s.Req.Path != tc.wantPath {
				t.Errorf("path %q, want %q", s.Req.Path, tc.wantPath)
			}
			if v, _ := s.RequestHeaders().Get("x-client"); v != tc.wantClint {
				t.Errorf("x-client %q, want %q", v, tc.wantClint)
			}
			for _, h := range tc.gone {
				if _, ok := s.RequestHeaders().Get(h); ok {
					t.Errorf("%s still sent", h)
				}
			}
			if tc.cookie != "" {
				if v, _ := s.RequestHeaders().Get("cookie"); v != tc.cookie {
					t.Errorf("cookie %q, want %q", v, tc.cookie)
				}
			}
			if v := st.Counter("http.t.api_key_auth.allowed").Value(); v != 1 {
				t.Errorf("allowed = %d", v)
			}
		})
	}
}

func TestMissingSettings(t *testing.T) {
	st := stats.NewStore()
	ctx := httpfilter.Context{Name: "auth", Stats: st, StatPrefix: "http.t."}
	for _, tc := range []struct{ config, details string }{
		{`{credentials: [{key: k1, client: a}]}`, "missing_key_sources"},
		{`{key_sources: [{header: x}]}`, "missing_credentials"},
	} {
		cfg, err := Factory{}.Compile(parse(t, tc.config, &apikeyv3.ApiKeyAuth{}), ctx)
		if err != nil {
			t.Fatal(err)
		}
		s := httpfiltertest.NewStream("GET", "/", "x", "k1")
		cfg.NewFilter().(httpfilter.Decoder).DecodeHeaders(s)
		if s.Reply == nil || s.Reply.Status != 401 || s.Reply.Details != tc.details {
			t.Errorf("%s: got %+v, want 401 %s", tc.config, s.Reply, tc.details)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	ctx := httpfilter.Context{Name: "auth", Stats: stats.NewStore(), StatPrefix: "http.t."}
	for _, tc := range []struct{ config, want string }{
		{`{credentials: [{key: k1, client: a}, {key: k1, client: b}]}`, "credentials[1].key: duplicated credential key"},
		{`{key_sources: [{header: x}, {}]}`, "key_sources[1]: one of 'header'/'query'/'cookie' must be set"},
	} {
		_, err := Factory{}.Compile(parse(t, tc.config, &apikeyv3.ApiKeyAuth{}), ctx)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.config, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "k1") {
			t.Errorf("error %q shows the key", err)
		}
	}
	_, err := Factory{}.CompileRoute(parse(t, `{key_sources: [{}]}`, &apikeyv3.ApiKeyAuthPerRoute{}), ctx)
	if err == nil || !strings.Contains(err.Error(), "key_sources[0]") {
		t.Errorf("route: error %v", err)
	}
}
