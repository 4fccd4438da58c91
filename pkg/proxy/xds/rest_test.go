package xds

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// restCall is one request the scripted REST server received, and the
// answer the test gives it.
type restCall struct {
	path, host, contentType string
	req                     *discoveryv3.DiscoveryRequest
	answer                  chan restAnswer
}

type restAnswer struct {
	status int
	body   string
}

// startScriptedREST serves requests by handing each to the test, which
// answers it.
func startScriptedREST(t *testing.T) (*httptest.Server, chan restCall) {
	t.Helper()
	calls := make(chan restCall)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c := restCall{path: r.URL.Path, host: r.Host, contentType: r.Header.Get("Content-Type"), req: &discoveryv3.DiscoveryRequest{}, answer: make(chan restAnswer, 1)}
		if err := protojson.Unmarshal(body, c.req); err != nil {
			t.Errorf("the request is not a JSON DiscoveryRequest: %v: %s", err, body)
		}
		select {
		case calls <- c:
		case <-r.Context().Done():
			return
		}
		select {
		case a := <-c.answer:
			w.WriteHeader(a.status)
			_, _ = io.WriteString(w, a.body)
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	return srv, calls
}

// ldsJSON is a listener response of version in JSON, as a REST server
// sends it.
func ldsJSON(version string) string {
	return `{"version_info": "` + version + `", "type_url": "` + ListenerTypeURL + `", "resources": [{"@type": "` + ListenerTypeURL + `", "name": "l` + version + `"}]}`
}

func TestRESTPolling(t *testing.T) {
	srv, calls := startScriptedREST(t)
	store := stats.NewStore()
	a, err := NewADS(ADSOptions{
		Node:    &corev3.Node{Id: "n1"},
		Stats:   store,
		TypeURL: ListenerTypeURL,
		// The requests' URL names no real host: send them all to srv.
		REST: &RESTOptions{Transport: redirectTo(srv), Host: "xds", RefreshDelay: time.Millisecond},
		Now:  func() time.Time { return testNow },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	var (
		mu      sync.Mutex
		applied []string
		refuse  error
	)
	sub, err := a.Subscribe(SubscriptionOptions{TypeURL: ListenerTypeURL, Stats: store.Scope("listener_manager.lds.")}, func(u Update) error {
		mu.Lock()
		defer mu.Unlock()
		applied = append(applied, u.VersionInfo)
		return refuse
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	counter := func(name string) uint64 { return store.Counter("listener_manager.lds." + name).Value() }
	next := func() restCall {
		t.Helper()
		select {
		case c := <-calls:
			return c
		case <-time.After(10 * time.Second):
			t.Fatal("no request")
		}
		return restCall{}
	}

	// The first request: the node, no version, the type's path, the
	// cluster's name as the Host.
	c := next()
	if c.path != "/v3/discovery:listeners" || c.host != "xds" || c.contentType != "application/json" {
		t.Errorf("request to %s, Host %q, Content-Type %q", c.path, c.host, c.contentType)
	}
	if c.req.GetNode().GetId() != "n1" || c.req.GetVersionInfo() != "" || c.req.GetTypeUrl() != ListenerTypeURL {
		t.Errorf("first request: %v", c.req)
	}
	c.answer <- restAnswer{http.StatusOK, ldsJSON("1")}
	<-sub.Ready()

	// Up to date: 304 changes nothing.
	c = next()
	if c.req.GetVersionInfo() != "1" {
		t.Errorf("second request carries version %q, want 1", c.req.GetVersionInfo())
	}
	c.answer <- restAnswer{http.StatusNotModified, ""}

	// A server error is a failure.
	c = next()
	c.answer <- restAnswer{http.StatusInternalServerError, "boom"}

	// A refused update is rejected; the next request carries the last
	// accepted version, without error_detail.
	c = next()
	mu.Lock()
	refuse = errors.New("bad listener")
	mu.Unlock()
	c.answer <- restAnswer{http.StatusOK, ldsJSON("2")}
	c = next()
	if c.req.GetVersionInfo() != "1" || c.req.GetErrorDetail() != nil {
		t.Errorf("after a rejection: version %q, error_detail %v", c.req.GetVersionInfo(), c.req.GetErrorDetail())
	}
	// A body that is not a DiscoveryResponse is rejected too.
	c.answer <- restAnswer{http.StatusOK, `{"version_info": 3`}
	_ = next()
	_ = a.Close()

	if len(applied) != 2 || applied[0] != "1" || applied[1] != "2" {
		t.Errorf("applied %v, want [1 2]", applied)
	}
	if sub.Version() != "1" {
		t.Errorf("Version() = %q, want 1", sub.Version())
	}
	// One attempt per request (six sent), as Envoy's REST subscriptions.
	want := map[string]uint64{"update_attempt": 6, "update_success": 1, "update_failure": 1, "update_rejected": 2, "update_empty": 0, "init_fetch_timeout": 0}
	for name, n := range want {
		if got := counter(name); got != n {
			t.Errorf("%s = %d, want %d", name, got, n)
		}
	}
	if got := store.TextReadout("listener_manager.lds.version_text").Value(); got != "1" {
		t.Errorf("version_text = %q", got)
	}
}

// redirectTo is a transport sending every request to srv.
func redirectTo(srv *httptest.Server) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.URL.Host = srv.Listener.Addr().String()
		return srv.Client().Transport.RoundTrip(r)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestRESTOptionsChecks(t *testing.T) {
	tr := http.DefaultTransport
	for name, o := range map[string]*RESTOptions{
		"no refresh delay": {Transport: tr, Host: "xds"},
		"negative timeout": {Transport: tr, Host: "xds", RefreshDelay: time.Second, RequestTimeout: -1},
		"bad host":         {Transport: tr, Host: "a b", RefreshDelay: time.Second},
		"no transport":     {Host: "xds", RefreshDelay: time.Second},
	} {
		if err := o.check(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	o := &RESTOptions{Transport: tr, Host: "xds", RefreshDelay: 100 * time.Millisecond}
	if err := o.check(); err != nil {
		t.Fatal(err)
	}
	if o.RequestTimeout != time.Second {
		t.Errorf("default request_timeout %v, want Envoy's 1s", o.RequestTimeout)
	}
	// Envoy's jitter: the delay plus a random part below it.
	for range 1000 {
		if d := o.delay(); d < 100*time.Millisecond || d >= 200*time.Millisecond {
			t.Fatalf("delay %v outside [100ms, 200ms)", d)
		}
	}
	if _, err := NewADS(ADSOptions{Node: &corev3.Node{}, Stats: stats.NewStore(), REST: o}); err == nil {
		t.Error("REST without a type URL accepted")
	}
}

// TestRESTInitialFetchTimeout checks that failed polls do not end the
// wait for the first response and the initial fetch timeout does, as
// Envoy's REST subscriptions: update_failure per failed request, one
// update_attempt per request, init_fetch_timeout once.
func TestRESTInitialFetchTimeout(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	store := stats.NewStore()
	a, err := NewADS(ADSOptions{
		Node:    &corev3.Node{Id: "n1"},
		Stats:   store,
		TypeURL: ListenerTypeURL,
		REST:    &RESTOptions{Transport: redirectTo(srv), Host: "xds", RefreshDelay: 5 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := a.Subscribe(SubscriptionOptions{TypeURL: ListenerTypeURL, Stats: store.Scope("lds."), InitialFetchTimeout: 300 * time.Millisecond},
		func(Update) error { t.Error("nothing should be applied"); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	// At least two requests fail before the wait ends.
	waitFor(t, "two failed polls", func() bool { return store.Counter("lds.update_failure").Value() >= 2 })
	select {
	case <-sub.Ready():
		if store.Counter("lds.init_fetch_timeout").Value() != 1 {
			t.Fatal("ready before the initial fetch timeout, on failed polls")
		}
	default:
	}
	select {
	case <-sub.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("the initial fetch timeout did not end the wait")
	}
	_ = a.Close()
	if got := store.Counter("lds.init_fetch_timeout").Value(); got != 1 {
		t.Errorf("init_fetch_timeout = %d", got)
	}
	attempts, failures, sent := store.Counter("lds.update_attempt").Value(), store.Counter("lds.update_failure").Value(), uint64(requests.Load())
	// The last request may have been cut by Close before it was answered
	// (counted as an attempt, not a failure).
	if attempts != sent && attempts != sent+1 || failures > attempts || failures+1 < attempts {
		t.Errorf("update_attempt %d, update_failure %d for %d requests answered", attempts, failures, sent)
	}
}
