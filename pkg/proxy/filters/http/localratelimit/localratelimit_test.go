package localratelimit

import (
	"strings"
	"sync"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	corsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	lrlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/local_ratelimit/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

func fromYAML(t *testing.T, y string, m proto.Message) {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if err := protojson.Unmarshal(j, m); err != nil {
		t.Fatal(err)
	}
}

func parse(t *testing.T, y string) *lrlv3.LocalRateLimit {
	t.Helper()
	var p lrlv3.LocalRateLimit
	fromYAML(t, y, &p)
	return &p
}

// clock is a fake clock the tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Unix(1000, 0)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// harness is a compiled filter on a fake clock.
type harness struct {
	t     *testing.T
	cfg   httpfilter.Config
	st    *stats.Store
	clock *clock
	table *router.Table
}

func newHarness(t *testing.T, config string) *harness {
	t.Helper()
	h := &harness{t: t, st: stats.NewStore(), clock: newClock()}
	cfg, err := Factory{}.Compile(parse(t, config), h.ctx())
	if err != nil {
		t.Fatal(err)
	}
	h.cfg = cfg
	return h
}

func (h *harness) ctx() httpfilter.Context {
	return httpfilter.Context{Name: "rl", Stats: h.st, StatPrefix: "http.test.", Now: h.clock.now}
}

// request runs one request through the filter's steps and returns the
// stream.
func (h *harness) request(s *httpfiltertest.Stream) *httpfiltertest.Stream {
	h.t.Helper()
	if h.table != nil && s.Matched == nil {
		s.Matched = h.table.Match("h", s.Req.Path)
		if s.Matched != nil {
			s.Cluster = s.Matched.Cluster
		}
	}
	f := h.cfg.NewFilter()
	st := f.(httpfilter.Decoder).DecodeHeaders(s)
	if (st == httpfilter.Stop) != (s.Reply != nil) {
		h.t.Fatalf("status %v with reply %+v", st, s.Reply)
	}
	f.(httpfilter.Encoder).EncodeHeaders(s)
	f.(httpfilter.Destroyer).OnDestroy()
	return s
}

func (h *harness) counter(name string) uint64 {
	return h.st.Counter("rl.http_local_rate_limit." + name).Value()
}

// status is the local reply's status, 200 when the request went on.
func status(s *httpfiltertest.Stream) int {
	if s.Reply == nil {
		return 200
	}
	return s.Reply.Status
}

const enforced = `
stat_prefix: rl
filter_enabled: {default_value: {numerator: 100}}
filter_enforced: {default_value: {numerator: 100}}
`

func TestTokenBucket(t *testing.T) {
	h := newHarness(t, enforced+`
token_bucket: {max_tokens: 2, tokens_per_fill: 1, fill_interval: 1s}
enable_x_ratelimit_headers: DRAFT_VERSION_03
response_headers_to_add: [{header: {key: x-limited, value: "yes"}}]
`)
	want := []struct {
		status                  int
		limit, remaining, reset string
	}{
		{200, "2", "1", "0"},
		{200, "2", "0", "1"},
		{429, "2", "0", "1"},
	}
	for i, w := range want {
		s := h.request(httpfiltertest.NewStream("GET", "/"))
		if got := status(s); got != w.status {
			t.Fatalf("request %d: status %d, want %d", i, got, w.status)
		}
		for name, v := range map[string]string{"x-ratelimit-limit": w.limit, "x-ratelimit-remaining": w.remaining, "x-ratelimit-reset": w.reset} {
			if got, _ := s.RespHeaders.Get(name); got != v {
				t.Errorf("request %d: %s = %q, want %q", i, name, got, v)
			}
		}
		limited, _ := s.RespHeaders.Get("x-limited")
		if (limited == "yes") != (w.status == 429) {
			t.Errorf("request %d: x-limited = %q", i, limited)
		}
		if w.status == 429 && (s.Reply.Body != "local_rate_limited" || s.Reply.Details != "local_rate_limited" || s.Flags != accesslog.RateLimited) {
			t.Errorf("reply %+v flags %v", s.Reply, s.Flags)
		}
	}
	// A second later, one token is back.
	h.clock.advance(time.Second)
	if got := status(h.request(httpfiltertest.NewStream("GET", "/"))); got != 200 {
		t.Errorf("after a fill: status %d", got)
	}
	if got := status(h.request(httpfiltertest.NewStream("GET", "/"))); got != 429 {
		t.Errorf("the token was used: status %d", got)
	}
	for name, want := range map[string]uint64{"enabled": 5, "ok": 3, "rate_limited": 2, "enforced": 2} {
		if v := h.counter(name); v != want {
			t.Errorf("%s = %d, want %d", name, v, want)
		}
	}
}

func TestNotEnforced(t *testing.T) {
	h := newHarness(t, `
stat_prefix: rl
filter_enabled: {default_value: {numerator: 100}}
filter_enforced: {default_value: {numerator: 0}}
token_bucket: {max_tokens: 1, fill_interval: 60s}
request_headers_to_add_when_not_enforced: [{header: {key: x-would-limit, value: "1"}}]
`)
	h.request(httpfiltertest.NewStream("GET", "/"))
	s := h.request(httpfiltertest.NewStream("GET", "/"))
	if status(s) != 200 {
		t.Fatalf("status %d", status(s))
	}
	if v, _ := s.ReqHeaders.Get("x-would-limit"); v != "1" {
		t.Errorf("x-would-limit = %q", v)
	}
	if h.counter("rate_limited") != 1 || h.counter("enforced") != 0 {
		t.Errorf("rate_limited %d enforced %d", h.counter("rate_limited"), h.counter("enforced"))
	}
}

func TestDisabledByDefault(t *testing.T) {
	// Without filter_enabled, the filter does nothing, as in Envoy.
	h := newHarness(t, `{stat_prefix: rl, token_bucket: {max_tokens: 1, fill_interval: 60s}}`)
	for i := 0; i < 3; i++ {
		if s := h.request(httpfiltertest.NewStream("GET", "/")); status(s) != 200 {
			t.Fatalf("request %d: %d", i, status(s))
		}
	}
	if h.counter("enabled") != 0 {
		t.Errorf("enabled = %d", h.counter("enabled"))
	}
}

func TestStatusAndGrpc(t *testing.T) {
	h := newHarness(t, enforced+`
token_bucket: {max_tokens: 1, fill_interval: 60s}
status: {code: ServiceUnavailable}
rate_limited_as_resource_exhausted: true
`)
	h.request(httpfiltertest.NewStream("GET", "/"))
	s := h.request(httpfiltertest.NewStream("GET", "/"))
	if s.Reply == nil || s.Reply.Status != 503 || !s.Reply.HasGrpcStatus || s.Reply.GrpcStatus != 8 {
		t.Errorf("reply %+v", s.Reply)
	}
	// A status below 400 is replaced by 429.
	h = newHarness(t, enforced+`
token_bucket: {max_tokens: 1, fill_interval: 60s}
status: {code: OK}
`)
	h.request(httpfiltertest.NewStream("GET", "/"))
	if s := h.request(httpfiltertest.NewStream("GET", "/")); s.Reply == nil || s.Reply.Status != 429 || s.Reply.HasGrpcStatus {
		t.Errorf("reply %+v", s.Reply)
	}
}

func TestPerConnection(t *testing.T) {
	h := newHarness(t, enforced+`
token_bucket: {max_tokens: 1, fill_interval: 60s}
local_rate_limit_per_downstream_connection: true
`)
	conn1 := httpfiltertest.NewStream("GET", "/")
	if status(h.request(conn1)) != 200 {
		t.Fatal("first request of connection 1 limited")
	}
	// The same connection: the fake keeps its state per stream value.
	conn1.Reply, conn1.RespHeaders = nil, httpfiltertest.NewHeaders()
	if status(h.request(conn1)) != 429 {
		t.Error("second request of connection 1 not limited")
	}
	if status(h.request(httpfiltertest.NewStream("GET", "/"))) != 200 {
		t.Error("connection 2 shares connection 1's bucket")
	}
}

// routesYAML routes / with rate limit actions, and /vh to a route without
// any (the virtual host's apply).
const routesYAML = `
virtual_hosts:
- domains: ["*"]
  rate_limits: [{actions: [{generic_key: {descriptor_value: vh}}]}]
  routes:
  - match: {prefix: /vh}
    route: {cluster: backend}
  - match: {prefix: /}
    route:
      cluster: backend
      rate_limits:
      - actions: [{request_headers: {header_name: x-user, descriptor_key: user}}]
      - stage: 1
        actions: [{generic_key: {descriptor_value: stage1}}]
      - disable_key: k
        actions: [{generic_key: {descriptor_value: disabled}}]
`

func compileRoutes(t *testing.T) *router.Table {
	var rc routev3.RouteConfiguration
	fromYAML(t, routesYAML, &rc)
	tb, err := router.Compile(&rc)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func TestDescriptors(t *testing.T) {
	h := newHarness(t, enforced+`
token_bucket: {max_tokens: 100, fill_interval: 60s}
descriptors:
- entries: [{key: user, value: ann}]
  token_bucket: {max_tokens: 1, fill_interval: 60s}
- entries: [{key: generic_key, value: vh}]
  token_bucket: {max_tokens: 2, fill_interval: 60s}
- entries: [{key: generic_key, value: stage1}]
  token_bucket: {max_tokens: 0, fill_interval: 60s}
- entries: [{key: generic_key, value: disabled}]
  token_bucket: {max_tokens: 0, fill_interval: 60s}
enable_x_ratelimit_headers: DRAFT_VERSION_03
`)
	h.table = compileRoutes(t)
	// ann has one token of her own.
	s := h.request(httpfiltertest.NewStream("GET", "/", "x-user", "ann"))
	if status(s) != 200 {
		t.Fatalf("ann's first request: %d", status(s))
	}
	if v, _ := s.RespHeaders.Get("x-ratelimit-limit"); v != "1" {
		t.Errorf("x-ratelimit-limit = %q: the descriptor's bucket decides", v)
	}
	if status(h.request(httpfiltertest.NewStream("GET", "/", "x-user", "ann"))) != 429 {
		t.Error("ann's second request went through")
	}
	// bob matches no descriptor: the default bucket. The stage 1 and
	// disabled entries never apply.
	for i := 0; i < 3; i++ {
		if status(h.request(httpfiltertest.NewStream("GET", "/", "x-user", "bob"))) != 200 {
			t.Fatalf("bob's request %d limited", i)
		}
	}
	// The route has rate limits, so the virtual host's are overridden;
	// /vh has none, so they apply.
	for i, want := range []int{200, 200, 429} {
		if got := status(h.request(httpfiltertest.NewStream("GET", "/vh"))); got != want {
			t.Errorf("/vh request %d: %d, want %d", i, got, want)
		}
	}
}

func TestAlwaysConsumeDefault(t *testing.T) {
	for _, always := range []bool{true, false} {
		cfg := enforced + `
token_bucket: {max_tokens: 1, fill_interval: 60s}
descriptors:
- entries: [{key: user, value: ann}]
  token_bucket: {max_tokens: 10, fill_interval: 60s}
`
		if !always {
			cfg += "always_consume_default_token_bucket: false\n"
		}
		h := newHarness(t, cfg)
		h.table = compileRoutes(t)
		got := []int{status(h.request(httpfiltertest.NewStream("GET", "/", "x-user", "ann"))), status(h.request(httpfiltertest.NewStream("GET", "/", "x-user", "ann")))}
		want := []int{200, 200}
		if always {
			want = []int{200, 429}
		}
		if got[0] != want[0] || got[1] != want[1] {
			t.Errorf("always_consume_default_token_bucket %v: %v, want %v", always, got, want)
		}
	}
}

func TestOwnRateLimits(t *testing.T) {
	h := newHarness(t, enforced+`
token_bucket: {max_tokens: 100, fill_interval: 60s}
rate_limits: [{actions: [{remote_address: {}}]}]
descriptors:
- entries: [{key: remote_address, value: 10.0.0.1}]
  token_bucket: {max_tokens: 1, fill_interval: 60s}
`)
	h.table = compileRoutes(t)
	mk := func(ip string) *httpfiltertest.Stream {
		s := httpfiltertest.NewStream("GET", "/")
		s.Remote = ip
		return s
	}
	if status(h.request(mk("10.0.0.1"))) != 200 || status(h.request(mk("10.0.0.1"))) != 429 || status(h.request(mk("10.0.0.2"))) != 200 {
		t.Error("the filter's own rate_limits were not used")
	}
}

// TestNegativeHits gives tokens back with an entry's is_negative_hits,
// as Envoy's requestAllowed: the matched bucket is refilled (up to its
// size) and the request is never denied by it.
func TestNegativeHits(t *testing.T) {
	h := newHarness(t, enforced+`
token_bucket: {max_tokens: 100, fill_interval: 60s}
rate_limits:
# A missing header is no number: that entry makes no descriptor.
- hits_addend: {format: "%REQ(x-take)%"}
  actions: [{generic_key: {descriptor_value: shared}}]
- hits_addend: {format: "%REQ(x-back)%", is_negative_hits: true}
  actions: [{generic_key: {descriptor_value: shared}}]
descriptors:
- entries: [{key: generic_key, value: shared}]
  token_bucket: {max_tokens: 3, fill_interval: 60s}
`)
	h.table = compileRoutes(t)
	req := func(hs ...string) int { return status(h.request(httpfiltertest.NewStream("GET", "/", hs...))) }
	if req("x-take", "3") != 200 || req("x-take", "2") != 429 {
		t.Fatal("taking 3, then 2 of 3 tokens")
	}
	if got := req("x-back", "2"); got != 200 {
		t.Fatalf("giving 2 back: %d", got)
	}
	if got := req("x-take", "2"); got != 200 {
		t.Errorf("taking the 2 given back: %d", got)
	}
	for i := range 2 {
		if got := req("x-back", "3"); got != 200 {
			t.Errorf("refill %d: %d", i, got)
		}
	}
	if req("x-take", "3") != 200 || req("x-take", "2") != 429 {
		t.Error("the bucket held more than its size after the refills")
	}
}

func TestPerRoute(t *testing.T) {
	h := newHarness(t, enforced+`token_bucket: {max_tokens: 100, fill_interval: 60s}`)
	rc, err := Factory{}.CompileRoute(parse(t, enforced+`
token_bucket: {max_tokens: 1, fill_interval: 60s}
stat_prefix: route_rl
`), h.ctx())
	if err != nil {
		t.Fatal(err)
	}
	mk := func() *httpfiltertest.Stream {
		s := httpfiltertest.NewStream("GET", "/")
		s.PerRoute = map[string][]httpfilter.RouteConfig{"rl": {rc}}
		return s
	}
	if status(h.request(mk())) != 200 || status(h.request(mk())) != 429 {
		t.Error("the route's bucket was not used")
	}
	if v := h.st.Counter("route_rl.http_local_rate_limit.rate_limited").Value(); v != 1 {
		t.Errorf("route_rl rate_limited = %d", v)
	}
	if _, err := (Factory{}).CompileRoute(parse(t, enforced), h.ctx()); err == nil || !strings.Contains(err.Error(), "token_bucket: local rate limit token bucket must be set") {
		t.Errorf("a per-route config without bucket: %v", err)
	}
}

func TestCompileErrors(t *testing.T) {
	tests := map[string]struct {
		config, want string
	}{
		"no stat_prefix": {`{token_bucket: {max_tokens: 1, fill_interval: 1s}}`, "stat_prefix: must be set"},
		"a short fill":   {`{stat_prefix: a, token_bucket: {max_tokens: 1, fill_interval: 0.01s}}`, "token_bucket.fill_interval: local rate limit token bucket fill timer must be >= 50ms"},
		"a duplicate wildcard": {`{stat_prefix: a, descriptors: [{entries: [{key: k}], token_bucket: {max_tokens: 1, fill_interval: 1s}}, {entries: [{key: j, value: v}], token_bucket: {max_tokens: 1, fill_interval: 1s}}, {entries: [{key: k}], token_bucket: {max_tokens: 2, fill_interval: 1s}}]}`,
			"descriptors[2]: duplicate descriptor in the local rate descriptor: also descriptors[0]"},
		"no dynamic descriptor": {`{stat_prefix: a, max_dynamic_descriptors: 0}`, "max_dynamic_descriptors: must be at least 1"},
		"a local cluster rate limit without local cluster": {`{stat_prefix: a, local_cluster_rate_limit: {}}`,
			"local_cluster_rate_limit: local_cluster_rate_limit is set but no local cluster name is present"},
		"a local cluster rate limit per connection": {`{stat_prefix: a, local_cluster_rate_limit: {}, local_rate_limit_per_downstream_connection: true}`,
			"local_cluster_rate_limit: local_cluster_rate_limit is set and local_rate_limit_per_downstream_connection is set to true"},
		"a duplicate":          {`{stat_prefix: a, descriptors: [{entries: [{key: k, value: v}], token_bucket: {max_tokens: 1, fill_interval: 1s}}, {entries: [{key: k, value: v}], token_bucket: {max_tokens: 2, fill_interval: 1s}}]}`, "descriptors[1]: duplicate descriptor"},
		"a bad header":         {`{stat_prefix: a, response_headers_to_add: [{header: {key: ":path", value: x}}]}`, "response_headers_to_add[0].header.key"},
		"a bad own rate limit": {`{stat_prefix: a, rate_limits: [{actions: []}]}`, "rate_limits[0].actions: at least one action is required"},
		"apply_on_stream_done": {`{stat_prefix: a, rate_limits: [{apply_on_stream_done: true, actions: [{remote_address: {}}]}]}`, "rate_limits[0].apply_on_stream_done: not supported by the local rate limit filter"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Factory{}.Compile(parse(t, tc.config), httpfilter.Context{Stats: stats.NewStore()})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Compile = %v, want an error with %q", err, tc.want)
			}
		})
	}
	if _, err := (Factory{}).Compile(&corsv3.Cors{}, httpfilter.Context{}); err == nil {
		t.Error("another filter's configuration was accepted")
	}
}

func TestShadowMode(t *testing.T) {
	h := newHarness(t, enforced+`
token_bucket: {max_tokens: 3, fill_interval: 60s}
descriptors:
- entries: [{key: user, value: ann}]
  token_bucket: {max_tokens: 1, fill_interval: 60s}
  shadow_mode: true
`)
	h.table = compileRoutes(t)
	// ann's own bucket has one token, but it is a shadow: running out
	// is counted, never enforced; the default bucket (3 tokens, always
	// consumed) still is.
	for i, want := range []int{200, 200, 200, 429} {
		if got := status(h.request(httpfiltertest.NewStream("GET", "/", "x-user", "ann"))); got != want {
			t.Errorf("request %d: %d, want %d", i, got, want)
		}
	}
	for name, want := range map[string]uint64{"ok": 1, "rate_limited": 3, "enforced": 1} {
		if got := h.counter(name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}
