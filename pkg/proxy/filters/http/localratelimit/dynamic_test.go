package localratelimit

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// userRequest is a request from user (the x-user header of the routes'
// rate limit actions).
func userRequest(user string) *httpfiltertest.Stream {
	return httpfiltertest.NewStream("GET", "/", "x-user", user)
}

// TestWildcardDescriptors checks Envoy's dynamic descriptors: a wildcard
// gives each value its own bucket, an exact descriptor wins over it, and
// only max_dynamic_descriptors values are kept, the least recently used
// forgotten (and starting again full).
func TestWildcardDescriptors(t *testing.T) {
	h := newHarness(t, enforced+`
token_bucket: {max_tokens: 100, fill_interval: 60s}
max_dynamic_descriptors: 2
descriptors:
- entries: [{key: user}]
  token_bucket: {max_tokens: 1, fill_interval: 60s}
- entries: [{key: user, value: vip}]
  token_bucket: {max_tokens: 3, fill_interval: 60s}
`)
	h.table = compileRoutes(t)
	req := func(user string) int { return status(h.request(userRequest(user))) }
	if req("ann") != 200 || req("ann") != 429 {
		t.Fatal("ann's own bucket of 1")
	}
	if req("bob") != 200 || req("bob") != 429 {
		t.Fatal("bob's own bucket of 1, not ann's")
	}
	// vip has an exact descriptor of 3 tokens.
	for i := range 3 {
		if req("vip") != 200 {
			t.Fatalf("vip's request %d limited: the exact descriptor did not win", i)
		}
	}
	w := h.cfg.(*filterConfig).cfg.shared.wildcards[0]
	if n := w.len(); n != 2 {
		t.Errorf("%d values kept, want ann and bob", n)
	}
	// carl makes 3 values: ann, the least recently used, is forgotten
	// and comes back with a full bucket; bob is still limited.
	if req("carl") != 200 {
		t.Fatal("carl's first request")
	}
	if n := w.len(); n != 2 {
		t.Errorf("%d values kept, want max_dynamic_descriptors 2", n)
	}
	if req("bob") != 429 {
		t.Error("bob's bucket was forgotten before ann's")
	}
	if req("ann") != 200 {
		t.Error("ann, forgotten, did not start again with a full bucket")
	}
}

// TestWildcardMatch checks the match of a wildcard with several entries:
// the keys in order, the values it has.
func TestWildcardMatch(t *testing.T) {
	d := newDynamicLimit(descriptorSpec{entries: entries("a", "1", "b", "")}, 5)
	for _, tc := range []struct {
		rd   []string
		want bool
	}{
		{[]string{"a", "1", "b", "x"}, true},
		{[]string{"a", "1", "b", ""}, true},
		{[]string{"a", "2", "b", "x"}, false},
		{[]string{"b", "x", "a", "1"}, false},
		{[]string{"a", "1"}, false},
		{[]string{"a", "1", "b", "x", "c", "y"}, false},
	} {
		if got := d.matches(entries(tc.rd...)); got != tc.want {
			t.Errorf("matches(%v) = %v, want %v", tc.rd, got, tc.want)
		}
	}
	// Values that would run together have keys of their own.
	b1 := d.bucket(entries("a", "1", "b", "x\x00"), 0)
	b2 := d.bucket(entries("a", "1", "b", "x"), 0)
	if b1 == b2 && b1 != nil {
		t.Error("two value tuples share a bucket")
	}
}

// TestLocalClusterShare checks local_cluster_rate_limit: each request
// takes as many tokens as the local cluster has hosts, and the share
// follows its membership.
func TestLocalClusterShare(t *testing.T) {
	st := stats.NewStore()
	members := st.Gauge("cluster.local.membership_total")
	members.Set(2)
	clk := newClock()
	ctx := httpfilter.Context{Name: "rl", Stats: st, StatPrefix: "http.test.", Now: clk.now, Services: localServices{name: "local", members: members}}
	cfg, err := Factory{}.Compile(parse(t, enforced+`
token_bucket: {max_tokens: 4, tokens_per_fill: 4, fill_interval: 60s}
local_cluster_rate_limit: {}
`), ctx)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, st: st, clock: clk, cfg: cfg}
	req := func() int { return status(h.request(httpfiltertest.NewStream("GET", "/"))) }
	// Two hosts: 2 of the 4 tokens are this proxy's.
	if got := []int{req(), req(), req()}; !slices.Equal(got, []int{200, 200, 429}) {
		t.Fatalf("with 2 hosts: %v, want 2 requests of the 4 tokens", got)
	}
	// A host goes: the whole bucket, refilled, is this proxy's.
	members.Set(1)
	clk.advance(60 * time.Second)
	for i := range 4 {
		if req() != 200 {
			t.Fatalf("alone, request %d of 4 limited", i)
		}
	}
	if req() != 429 {
		t.Error("alone, a fifth request went through")
	}
	// No host (the local cluster is empty): a share of 1, as Envoy's.
	members.Set(0)
	clk.advance(60 * time.Second)
	if req() != 200 {
		t.Error("with no host, the bucket was not this proxy's")
	}

	if _, err := (Factory{}).Compile(parse(t, enforced+`local_cluster_rate_limit: {}`),
		httpfilter.Context{Stats: st, Services: localServices{name: "local"}}); err == nil || !strings.Contains(err.Error(), `no local cluster is present (no cluster "local")`) {
		t.Errorf("a local cluster name without its cluster: %v", err)
	}
}

// TestRetryAfter checks enable_retry_after_header: an enforced 429 gets
// the seconds until the refusing bucket has a token, at least 1; a
// Retry-After of response_headers_to_add stays, and other statuses get
// none.
func TestRetryAfter(t *testing.T) {
	for name, tc := range map[string]struct {
		extra string
		want  string
	}{
		"the default bucket":            {"", "10"},
		"off":                           {"enable_retry_after_header: false\n", ""},
		"on":                            {"enable_retry_after_header: true\n", "10"},
		"the configured header stays":   {`response_headers_to_add: [{header: {key: retry-after, value: "99"}}]` + "\n", "99"},
		"another status":                {"status: {code: 503}\n", ""},
		"a bucket with no token at all": {"descriptors: [{entries: [{key: user, value: ann}], token_bucket: {max_tokens: 0, fill_interval: 1s}}]\n", ""},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, enforced+`
token_bucket: {max_tokens: 1, tokens_per_fill: 1, fill_interval: 20s}
`+retryAfterOn(tc.extra))
			h.table = compileRoutes(t)
			if s := h.request(userRequest("ann")); status(s) != 200 && !strings.Contains(name, "no token") {
				t.Fatalf("first request: %d", status(s))
			}
			// Half the refill has passed: 10 s to the next token.
			h.clock.advance(10 * time.Second)
			s := h.request(userRequest("ann"))
			if status(s) == 200 {
				t.Fatal("second request went through")
			}
			got, _ := s.RespHeaders.Get("retry-after")
			if got != tc.want {
				t.Errorf("retry-after %q, want %q", got, tc.want)
			}
		})
	}
}

// retryAfterOn adds enable_retry_after_header: true to extra, unless it
// sets it.
func retryAfterOn(extra string) string {
	if strings.Contains(extra, "enable_retry_after_header") {
		return extra
	}
	return extra + "enable_retry_after_header: true\n"
}

// entries makes descriptor entries of key, value pairs.
func entries(kv ...string) []router.DescriptorEntry {
	var out []router.DescriptorEntry
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, router.DescriptorEntry{Key: kv[i], Value: kv[i+1]})
	}
	return out
}

// localServices is a server with a local cluster.
type localServices struct {
	httpfilter.Services
	name    string
	members *stats.Gauge
}

func (l localServices) LocalClusterMembers() (string, *stats.Gauge) { return l.name, l.members }
