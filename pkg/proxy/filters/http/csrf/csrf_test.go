package csrf

import (
	"strings"
	"testing"

	csrfv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/csrf/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// defaults is a runtime with no values.
type defaults struct{}

func (defaults) Uint64(_ string, def uint64) uint64 { return def }

func parse(t *testing.T, y string) *csrfv3.CsrfPolicy {
	t.Helper()
	var c csrfv3.CsrfPolicy
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if err := protojson.Unmarshal(j, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

func TestCsrf(t *testing.T) {
	const enforced = `{filter_enabled: {default_value: {numerator: 100}}, additional_origins: [{suffix: ".trusted.example"}]}`
	const shadow = `{filter_enabled: {default_value: {numerator: 0}}, shadow_enabled: {default_value: {numerator: 100}}}`
	for _, tc := range []struct {
		name, config, method string
		headers              []string
		status               int // 0: forwarded
		valid, invalid, miss uint64
	}{
		{"same origin", enforced, "POST", []string{"origin", "http://shop.example:8080"}, 0, 1, 0, 0},
		{"other origin", enforced, "POST", []string{"origin", "https://evil.example"}, 403, 0, 1, 0},
		{"additional origin", enforced, "DELETE", []string{"origin", "https://app.trusted.example"}, 0, 1, 0, 0},
		{"referer when no origin", enforced, "PUT", []string{"referer", "http://shop.example:8080/form"}, 0, 1, 0, 0},
		{"no source", enforced, "PATCH", nil, 403, 0, 1, 1},
		{"safe method", enforced, "GET", []string{"origin", "https://evil.example"}, 0, 0, 0, 0},
		{"shadow only counts", shadow, "POST", []string{"origin", "https://evil.example"}, 0, 0, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := stats.NewStore()
			cfg, err := Factory{}.Compile(parse(t, tc.config), httpfilter.Context{Name: "csrf", Stats: st, StatPrefix: "http.t.", Runtime: defaults{}})
			if err != nil {
				t.Fatal(err)
			}
			s := httpfiltertest.NewStream(tc.method, "/", tc.headers...)
			s.Req.Host = "shop.example:8080"
			cfg.NewFilter().(httpfilter.Decoder).DecodeHeaders(s)
			switch {
			case tc.status == 0 && s.Reply != nil:
				t.Errorf("answered %d", s.Reply.Status)
			case tc.status != 0 && (s.Reply == nil || s.Reply.Status != tc.status || s.Reply.Body != "Invalid origin"):
				t.Errorf("reply %+v, want %d Invalid origin", s.Reply, tc.status)
			}
			for name, want := range map[string]uint64{"request_valid": tc.valid, "request_invalid": tc.invalid, "missing_source_origin": tc.miss} {
				if got := st.Counter("http.t.csrf." + name).Value(); got != want {
					t.Errorf("%s = %d, want %d", name, got, want)
				}
			}
		})
	}
}

func TestPerRoute(t *testing.T) {
	st := stats.NewStore()
	cfg, err := Factory{}.Compile(parse(t, `{filter_enabled: {default_value: {numerator: 100}}}`), httpfilter.Context{Name: "csrf", Stats: st, Runtime: defaults{}})
	if err != nil {
		t.Fatal(err)
	}
	off, err := Factory{}.CompileRoute(parse(t, `{filter_enabled: {default_value: {numerator: 0}}}`), httpfilter.Context{})
	if err != nil {
		t.Fatal(err)
	}
	s := httpfiltertest.NewStream("POST", "/", "origin", "https://evil.example")
	s.PerRoute = map[string][]httpfilter.RouteConfig{"csrf": {off}}
	cfg.NewFilter().(httpfilter.Decoder).DecodeHeaders(s)
	if s.Reply != nil {
		t.Errorf("the route's disabled policy did not replace the filter's: %+v", s.Reply)
	}
}

func TestRefused(t *testing.T) {
	for _, tc := range []struct{ config, want string }{
		{`{}`, "filter_enabled: must be set"},
		{`{filter_enabled: {default_value: {numerator: 1}}, additional_origins: [{safe_regex: {regex: "("}}]}`, "additional_origins[0]."},
	} {
		_, err := Factory{}.Compile(parse(t, tc.config), httpfilter.Context{Stats: stats.NewStore(), Runtime: defaults{}})
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want prefix %q", tc.config, err, tc.want)
		}
	}
}
