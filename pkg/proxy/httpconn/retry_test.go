package httpconn

import (
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

func TestWouldRetryReset(t *testing.T) {
	tests := []struct {
		on      router.RetryOn
		reason  resetReason
		started bool
		want    bool
	}{
		{on: router.RetryOn5xx, reason: resetRemote, started: true, want: true},
		{on: router.RetryOnGatewayError, reason: resetPerTryTimeout, started: true, want: true},
		{on: router.RetryOnReset, reason: resetRemote, started: true, want: true},
		// A connect failure is a reset too, which 5xx covers.
		{on: router.RetryOn5xx, reason: resetConnectFailure, want: true},
		{on: router.RetryOnConnectFailure, reason: resetConnectFailure, want: true},
		{on: router.RetryOnConnectFailure, reason: resetRemote, started: true, want: false},
		{on: router.RetryOnResetBeforeRequest, reason: resetConnectFailure, want: true},
		{on: router.RetryOnResetBeforeRequest, reason: resetRemote, started: true, want: false},
		{on: router.RetryOnRefusedStream, reason: resetRefusedStream, started: true, want: true},
		{on: router.RetryOnRefusedStream, reason: resetRemote, started: true, want: false},
		{on: router.RetryOnRetriable4xx | router.RetryOnRetriableStatusCodes | router.RetryOnGrpc, reason: resetRemote, started: true, want: false},
		{on: router.RetryOnHTTP3PostConnectFailure, reason: resetRemote, started: true, want: false},
	}
	for _, tt := range tests {
		r := retryState{on: tt.on}
		if got := r.wouldRetryReset(tt.reason, tt.started); got != tt.want {
			t.Errorf("on %b, reason %d, started %v: %v; want %v", tt.on, tt.reason, tt.started, got, tt.want)
		}
	}
}

func TestWouldRetryResponse(t *testing.T) {
	policy := &router.RetryPolicy{}
	tests := []struct {
		name    string
		on      router.RetryOn
		status  int
		headers [][2]string
		codes   []uint32
		names   []string
		want    bool
	}{
		{name: "5xx", on: router.RetryOn5xx, status: 500, want: true},
		{name: "5xx not 4xx", on: router.RetryOn5xx, status: 429, want: false},
		{name: "gateway error", on: router.RetryOnGatewayError, status: 503, want: true},
		{name: "gateway error not 500", on: router.RetryOnGatewayError, status: 500, want: false},
		{name: "retriable 4xx", on: router.RetryOnRetriable4xx, status: 409, want: true},
		{name: "retriable 4xx not 404", on: router.RetryOnRetriable4xx, status: 404, want: false},
		{name: "status codes", on: router.RetryOnRetriableStatusCodes, status: 429, codes: []uint32{418, 429}, want: true},
		{name: "status codes need the condition", on: router.RetryOn5xx, status: 429, codes: []uint32{429}, want: false},
		{name: "retriable header name", on: router.RetryOnRetriableHeaders, status: 200, headers: [][2]string{{"x-again", "1"}}, names: []string{"x-again"}, want: true},
		{name: "ratelimited without its condition", on: router.RetryOn5xx, status: 503, headers: [][2]string{{"x-envoy-ratelimited", "true"}}, want: false},
		{name: "ratelimited", on: router.RetryOnEnvoyRateLimited, status: 429, headers: [][2]string{{"x-envoy-ratelimited", "true"}}, want: true},
		{name: "grpc unavailable", on: router.RetryOnGrpcUnavailable, status: 200, headers: [][2]string{{"grpc-status", "14"}}, want: true},
		{name: "grpc internal", on: router.RetryOnGrpcInternal, status: 200, headers: [][2]string{{"grpc-status", "13"}}, want: true},
		{name: "grpc other status", on: router.RetryOnGrpc, status: 200, headers: [][2]string{{"grpc-status", "5"}}, want: false},
		{name: "grpc cancelled needs its condition", on: router.RetryOnGrpcUnavailable, status: 200, headers: [][2]string{{"grpc-status", "1"}}, want: false},
		{name: "success", on: router.RetryOn5xx | router.RetryOnRetriable4xx, status: 200, want: false},
	}
	for _, tt := range tests {
		s := &stream{}
		s.retry = retryState{on: tt.on, codes: tt.codes, headerNames: tt.names, policy: policy}
		for _, h := range tt.headers {
			s.respHeaders.Add(h[0], h[1])
		}
		if got := s.wouldRetryResponse(tt.status); got != tt.want {
			t.Errorf("%s: %v; want %v", tt.name, got, tt.want)
		}
	}
}

// retryTestStream is a stream with a retry state on a fake cluster,
// enough for the decisions and back-offs.
func retryTestStream(t *testing.T) (*stream, *fakeCluster) {
	t.Helper()
	st := stats.NewStore()
	fc := newFakeCluster(st, "c", false)
	s := &stream{m: &Manager{}}
	s.cluster = fc
	s.host = &upstream.Host{Address: "127.0.0.1:1"}
	return s, fc
}

func TestShouldRetryCountsAndFlags(t *testing.T) {
	s, fc := retryTestStream(t)
	s.retry = retryState{active: true, on: router.RetryOn5xx, remaining: 1}
	rs := fc.stats.Retries()
	if !s.shouldRetry(fc, true) {
		t.Fatal("the first retriable outcome is not retried")
	}
	if s.shouldRetry(fc, true) {
		t.Fatal("retried past num_retries")
	}
	if rs.Retry().Value() != 1 || rs.LimitExceeded().Value() != 1 || rs.Success().Value() != 0 {
		t.Errorf("retry %d, limit exceeded %d, success %d; want 1, 1, 0", rs.Retry().Value(), rs.LimitExceeded().Value(), rs.Success().Value())
	}
	if s.flags.String() != "URX" {
		t.Errorf("flags = %s; want URX", s.flags)
	}

	s, fc = retryTestStream(t)
	s.retry = retryState{active: true, on: router.RetryOn5xx, remaining: 3}
	if !s.shouldRetry(fc, true) || s.shouldRetry(fc, false) {
		t.Fatal("a retry then a success")
	}
	if fc.stats.Retries().Success().Value() != 1 {
		t.Errorf("success = %d; want 1", fc.stats.Retries().Success().Value())
	}

	// A body too big to keep makes the request not retriable.
	s, fc = retryTestStream(t)
	s.retry = retryState{active: true, on: router.RetryOn5xx, remaining: 3, body: &retryBody{over: true}}
	s.retry.body.done.Store(true)
	if s.shouldRetry(fc, true) {
		t.Error("retried a request whose body was not kept")
	}
}

func TestNextBackOffBounds(t *testing.T) {
	s, fc := retryTestStream(t)
	base := 10 * time.Millisecond
	s.retry = retryState{active: true, policy: &router.RetryPolicy{BaseInterval: base, MaxInterval: 40 * time.Millisecond, BackOffSet: true}, backoffCap: base}
	ceilings := []time.Duration{base, 2 * base, 4 * base, 4 * base, 4 * base}
	for i, ceiling := range ceilings {
		for range 50 {
			s.retry.backoffCap = ceiling
			if d := s.nextBackOff(fc.stats.Retries()); d < 0 || d >= ceiling {
				t.Fatalf("retry %d: back-off %v outside [0, %v)", i, d, ceiling)
			}
		}
	}
	// The ceiling doubles per retry up to the maximum.
	s.retry.backoffCap = base
	for _, want := range []time.Duration{20, 40, 40} {
		s.nextBackOff(fc.stats.Retries())
		if s.retry.backoffCap != want*time.Millisecond {
			t.Fatalf("ceiling = %v; want %v", s.retry.backoffCap, want*time.Millisecond)
		}
	}
	// The default: 25 ms base, ten times that at most.
	s.retry.policy = nil
	if s.baseInterval() != 25*time.Millisecond || s.maxInterval() != 250*time.Millisecond {
		t.Errorf("default back-off %v..%v; want 25ms..250ms", s.baseInterval(), s.maxInterval())
	}
	// The runtime's upstream.base_retry_backoff_ms replaces the default,
	// not a configured retry_back_off.
	s.m = &Manager{deps: Deps{Runtime: fixedRuntime{"upstream.base_retry_backoff_ms": 100}}}
	s.retry.policy = &router.RetryPolicy{BaseInterval: router.DefaultRetryBaseInterval}
	if s.baseInterval() != 100*time.Millisecond || s.maxInterval() != time.Second {
		t.Errorf("runtime back-off %v..%v; want 100ms..1s", s.baseInterval(), s.maxInterval())
	}
	s.retry.policy = &router.RetryPolicy{BaseInterval: 25 * time.Millisecond, MaxInterval: 50 * time.Millisecond, BackOffSet: true}
	if s.baseInterval() != 25*time.Millisecond || s.maxInterval() != 50*time.Millisecond {
		t.Errorf("configured back-off %v..%v; want 25ms..50ms", s.baseInterval(), s.maxInterval())
	}
	// A rate-limited back-off is jittered upward from the interval.
	s.retry.rateLimited = time.Second
	if d := s.nextBackOff(fc.stats.Retries()); d < time.Second || d > 1500*time.Millisecond {
		t.Errorf("rate-limited back-off %v outside [1s, 1.5s]", d)
	}
	if fc.stats.Retries().BackoffRatelimited().Value() != 1 {
		t.Errorf("backoff_ratelimited = %d; want 1", fc.stats.Retries().BackoffRatelimited().Value())
	}
}

func TestResetInterval(t *testing.T) {
	s, _ := retryTestStream(t)
	s.retry.policy = &router.RetryPolicy{ResetMaxInterval: 10 * time.Second, ResetHeaders: []router.ResetHeader{
		{Name: "retry-after"}, {Name: "x-ratelimit-reset", UnixTimestamp: true}}}
	s.respHeaders.Add("retry-after", "60") // past the maximum: skipped
	s.respHeaders.Add("x-ratelimit-reset", "junk")
	if d := s.resetInterval(); d != 0 {
		t.Errorf("interval = %v; want none", d)
	}
	s.respHeaders.reset()
	s.respHeaders.Add("retry-after", "3")
	if d := s.resetInterval(); d != 3*time.Second {
		t.Errorf("interval = %v; want 3s", d)
	}
	s.respHeaders.reset()
	s.respHeaders.Add("x-ratelimit-reset", "9999999999999")
	if d := s.resetInterval(); d != 0 {
		t.Errorf("a far timestamp gave %v; want none", d)
	}
}

func TestInitRetriesHeaders(t *testing.T) {
	s, _ := retryTestStream(t)
	s.route = &router.Route{RetryPolicy: &router.RetryPolicy{RetryOn: router.RetryOnRetriableStatusCodes, NumRetries: 1,
		RetriableStatusCodes: []uint32{418}, PerTryTimeout: time.Second}}
	s.rqTimeout = 15 * time.Second
	for _, h := range [][2]string{
		{"x-envoy-retry-on", "5xx,nonsense"}, {"x-envoy-retry-grpc-on", "unavailable"}, {"x-envoy-max-retries", "5"},
		{"x-envoy-retriable-status-codes", "429, x,409"}, {"x-envoy-retriable-header-names", " X-Again ,"},
		{"x-envoy-upstream-rq-timeout-ms", "3000"}, {"x-envoy-upstream-rq-per-try-timeout-ms", "500"},
		{"x-envoy-hedge-on-per-try-timeout", "true"}, {"x-keep", "1"},
	} {
		s.reqHeaders.Add(h[0], h[1])
	}
	s.initRetries()
	r := &s.retry
	if !r.active || r.on != router.RetryOnRetriableStatusCodes|router.RetryOn5xx|router.RetryOnGrpcUnavailable {
		t.Errorf("active %v, on %b", r.active, r.on)
	}
	if r.remaining != 5 {
		t.Errorf("remaining = %d; want 5 (x-envoy-max-retries)", r.remaining)
	}
	if len(r.codes) != 3 || r.codes[0] != 418 || r.codes[1] != 429 || r.codes[2] != 409 {
		t.Errorf("codes = %v; want [418 429 409]", r.codes)
	}
	if len(r.headerNames) != 1 || r.headerNames[0] != "x-again" {
		t.Errorf("header names = %q", r.headerNames)
	}
	if s.rqTimeout != 3*time.Second || r.perTry != 500*time.Millisecond {
		t.Errorf("timeouts = %v, per try %v; want 3s, 500ms", s.rqTimeout, r.perTry)
	}
	if len(s.reqHeaders.fields) != 1 || s.reqHeaders.fields[0].name != "x-keep" {
		t.Errorf("headers left for the upstream: %+v", s.reqHeaders.fields)
	}

	// Without a policy and without headers, nothing is set up.
	s, _ = retryTestStream(t)
	s.route = &router.Route{}
	s.reqHeaders.Add("x-other", "1")
	s.initRetries()
	if s.retry.active {
		t.Error("retries set up without a policy or header")
	}
	// A per-try timeout at or past the route timeout does not apply.
	s, _ = retryTestStream(t)
	s.route = &router.Route{RetryPolicy: &router.RetryPolicy{RetryOn: router.RetryOn5xx, PerTryTimeout: 2 * time.Second}}
	s.rqTimeout = time.Second
	s.initRetries()
	if s.retry.perTry != 0 {
		t.Errorf("per try = %v; want none", s.retry.perTry)
	}
}

// pieces is a bodySource of fixed pieces.
type pieces struct{ p [][]byte }

func (b *pieces) Next() ([]byte, error) {
	if len(b.p) == 0 {
		return nil, io.EOF
	}
	p := b.p[0]
	b.p = b.p[1:]
	if len(b.p) == 0 {
		return p, io.EOF
	}
	return p, nil
}

// readBody reads a body source to its end.
func readBody(t *testing.T, b bodySource) string {
	t.Helper()
	var out []byte
	for range 100 {
		p, err := b.Next()
		out = append(out, p...)
		if errors.Is(err, io.EOF) {
			return string(out)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Fatal("the body never ended")
	return ""
}

func TestRetryBody(t *testing.T) {
	st := stats.NewStore()
	cs := upstream.NewClusterStats(st.Scope("cluster.c."))
	abandoned := cs.RetryOrShadowAbandoned()
	b := &retryBody{src: &pieces{p: [][]byte{[]byte("ab"), []byte("cd")}}, limit: 10, abandoned: cs}
	if got := readBody(t, b); got != "abcd" {
		t.Fatalf("first read %q", got)
	}
	if !b.done.Load() || b.over {
		t.Fatal("a small body is not kept")
	}
	b.rewind()
	if got := readBody(t, b); got != "abcd" {
		t.Fatalf("replay %q", got)
	}

	// Interrupted mid-way, the replay resumes from the client.
	b = &retryBody{src: &pieces{p: [][]byte{[]byte("ab"), []byte("cd")}}, limit: 10, abandoned: cs}
	if p, _ := b.Next(); string(p) != "ab" {
		t.Fatalf("first piece %q", p)
	}
	b.rewind()
	if got := readBody(t, b); got != "abcd" {
		t.Fatalf("resumed replay %q", got)
	}

	b = &retryBody{src: &pieces{p: [][]byte{[]byte("abcdef"), []byte("ghijkl")}}, limit: 10, abandoned: cs}
	if got := readBody(t, b); got != "abcdefghijkl" {
		t.Fatalf("big body %q", got)
	}
	if !b.over || b.buf != nil || abandoned.Value() != 1 {
		t.Errorf("over %v, kept %d bytes, abandoned %d; want true, 0, 1", b.over, len(b.buf), abandoned.Value())
	}
}

func TestPreviousPrioritiesUpdateFrequency(t *testing.T) {
	s := &stream{}
	// used, as initRetries marks a request with a policy.
	s.retry.used = true
	s.retry.policy = &router.RetryPolicy{PriorityUpdateFrequency: 2}
	hosts := []*upstream.Host{{Priority: 0}, {Priority: 1}, {Priority: 2}, {Priority: 0}}
	// After each attempted host: nothing excluded before the second, P0
	// and P1 from the second on (the third keeps that set), all three
	// from the fourth.
	want := [][]bool{nil, {true, true}, {true, true}, {true, true, true}}
	for i, h := range hosts {
		s.host = h
		s.previousPriorities()
		if got := s.pick.ExcludedPriorities; !slices.Equal(got, want[i]) {
			t.Errorf("after attempt %d: excluded %v; want %v", i+1, got, want[i])
		}
	}
	s.retry.reset()
	if len(s.retry.seenPrio) != 0 || s.retry.priorAttempts != 0 {
		t.Errorf("reset kept %v, %d", s.retry.seenPrio, s.retry.priorAttempts)
	}
}
