package jwtauthn

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// initServices reaches the cluster "jwks" and records the init targets a
// listener would wait for.
type initServices struct {
	loopbackServices
	targets []initTarget
}

type initTarget struct {
	name  string
	start func()
	ready <-chan struct{}
}

func (s *initServices) AddInitTarget(name string, start func(), ready <-chan struct{}) {
	s.targets = append(s.targets, initTarget{name, start, ready})
}

// compileRemote compiles a filter whose provider "p" has the remote_jwks
// (JSON) of the cluster "jwks", through svc, and requires it everywhere.
func compileRemote(t *testing.T, remote string, svc httpfilter.Services) (*compiled, error) {
	t.Helper()
	c, err := compileWith(`{"providers":{"p":{"issuer":"iss","remote_jwks":`+remote+`}},
		"rules":[{"match":{"prefix":"/"},"requires":{"provider_name":"p"}}]}`, nil, svc)
	if err == nil {
		t.Cleanup(func() { _ = c.Close() })
	}
	return c, err
}

// flakyJWKS serves doc after failing the first fails requests with code
// (0: the connection is closed without an answer; -1: no answer until the
// client goes away).
func flakyJWKS(t *testing.T, doc string, fails int64, code int) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= fails {
			if code == -1 {
				<-r.Context().Done()
				return
			}
			if code == 0 {
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					conn.Close()
				}
				return
			}
			w.WriteHeader(code)
			return
		}
		fmt.Fprint(w, doc)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

const remoteURI = `"http_uri":{"uri":"http://idp.example/jwks.json","cluster":"jwks","timeout":"10s"}`

// TestRetryPolicy checks remote_jwks' retry_policy: 5xx answers, resets
// and tries that outlive max_interval are tried again up to num_retries
// (1 without it), after a back-off; other failures are not retried;
// without retry_policy a fetch is tried once.
func TestRetryPolicy(t *testing.T) {
	s := newSigner(t, jose.ES256, "k")
	doc := jwks(t, s)
	tok := s.sign(t, claims(nil))
	for _, tc := range []struct {
		name, policy string
		fails        int64
		code         int
		pass         bool
		tries        int64
	}{
		{"no policy", "", 1, 503, false, 1},
		{"default one retry", `,"retry_policy":{}`, 1, 503, true, 2},
		{"default one retry, two failures", `,"retry_policy":{}`, 2, 500, false, 2},
		{"three retries", `,"retry_policy":{"num_retries":3,"retry_back_off":{"base_interval":"0.001s","max_interval":"0.004s"}}`, 3, 502, true, 4},
		{"reset retried", `,"retry_policy":{}`, 1, 0, true, 2},
		{"reset, no policy", "", 1, 0, false, 1},
		// max_interval is the per-try timeout: a try that hangs is
		// retried, well within http_uri.timeout.
		{"per-try timeout retried", `,"retry_policy":{"retry_back_off":{"base_interval":"0.01s","max_interval":"0.2s"}}`, 1, -1, true, 2},
		{"404 not retried", `,"retry_policy":{"num_retries":3}`, 1, 404, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, n := flakyJWKS(t, doc, tc.fails, tc.code)
			c, err := compileRemote(t, `{`+remoteURI+tc.policy+`}`, loopbackServices{srv.Listener.Addr().String()})
			if err != nil {
				t.Fatal(err)
			}
			st := get("/", "authorization", "Bearer "+tok)
			if ok, _ := c.run(st); ok != tc.pass {
				t.Fatalf("passed %v, want %v (reply %+v)", ok, tc.pass, st.Reply)
			}
			if got := n.Load(); got != tc.tries {
				t.Errorf("%d tries, want %d", got, tc.tries)
			}
			wantOK, wantFailed := uint64(0), uint64(1)
			if tc.pass {
				wantOK, wantFailed = 1, 0
			}
			if c.counter("jwks_fetch_success") != wantOK || c.counter("jwks_fetch_failed") != wantFailed {
				t.Errorf("success %d failed %d: one fetch counts once, whatever its tries", c.counter("jwks_fetch_success"), c.counter("jwks_fetch_failed"))
			}
		})
	}
	for _, tc := range []struct{ policy, want string }{
		{`{"retry_back_off":{"base_interval":"1s","max_interval":"0.5s"}}`, `providers["p"].remote_jwks.retry_policy.retry_back_off.max_interval: max_interval must be greater than or equal to the base_interval`},
		{`{"retry_back_off":{"base_interval":"0s"}}`, `providers["p"].remote_jwks.retry_policy.retry_back_off.base_interval: must be at least 1ms`},
		{`{"retry_on":"5xx"}`, `providers["p"].remote_jwks.retry_policy.retry_on: not supported by Outrigger for remote_jwks`},
	} {
		if _, err := compileRemote(t, `{`+remoteURI+`,"retry_policy":`+tc.policy+`}`, loopbackServices{"127.0.0.1:1"}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.policy, err, tc.want)
		}
	}
}

// TestDefaultCacheDuration checks Envoy's default cache_duration, 600 s,
// and async_fetch's refetch 5 s before it ends.
func TestDefaultCacheDuration(t *testing.T) {
	c, err := compileRemote(t, `{`+remoteURI+`,"async_fetch":{"fast_listener":true}}`, loopbackServices{"127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if r := c.providers["p"].remote; r.cacheDuration != 600*time.Second || r.refetch != 595*time.Second {
		t.Fatalf("cache_duration %v, refetch %v", r.cacheDuration, r.refetch)
	}
}

// TestFastListenerFalse checks async_fetch with fast_listener false: the
// listener gets an init target named as Envoy's, nothing is fetched before
// it starts it, and it is ready once the first fetch ended, with the keys
// then there for requests, or after a failed one; without a listener to
// wait, the configuration is refused.
func TestFastListenerFalse(t *testing.T) {
	s := newSigner(t, jose.ES256, "k")
	doc := jwks(t, s)
	for _, fails := range []int64{0, 1 << 30} {
		t.Run(fmt.Sprintf("fails=%d", fails), func(t *testing.T) {
			srv, n := flakyJWKS(t, doc, fails, 503)
			svc := &initServices{loopbackServices: loopbackServices{srv.Listener.Addr().String()}}
			c, err := compileRemote(t, `{`+remoteURI+`,"async_fetch":{"fast_listener":false}}`, svc)
			if err != nil {
				t.Fatal(err)
			}
			if len(svc.targets) != 1 || svc.targets[0].name != "Jwks async fetching url=http://idp.example/jwks.json" {
				t.Fatalf("init targets %+v", svc.targets)
			}
			tg := svc.targets[0]
			select {
			case <-tg.ready:
				t.Fatal("ready before the listener started it")
			default:
			}
			if n.Load() != 0 {
				t.Fatal("fetched before the listener warmed")
			}
			tg.start()
			tg.start() // the listener may start it more than once
			select {
			case <-tg.ready:
			case <-time.After(10 * time.Second):
				t.Fatal("the init target never became ready")
			}
			if fails == 0 {
				if n.Load() != 1 || c.counter("jwks_fetch_success") != 1 {
					t.Fatalf("%d fetches, success %d", n.Load(), c.counter("jwks_fetch_success"))
				}
				st := get("/", "authorization", "Bearer "+s.sign(t, claims(nil)))
				if ok, _ := c.run(st); !ok || n.Load() != 1 {
					t.Fatalf("passed %v after %d fetches: %+v", ok, n.Load(), st.Reply)
				}
			} else if c.counter("jwks_fetch_failed") < 1 {
				t.Fatal("ready without a fetch having ended")
			}
		})
	}
	_, err := compileRemote(t, `{`+remoteURI+`,"async_fetch":{"fast_listener":false}}`, loopbackServices{"127.0.0.1:1"})
	if err == nil || !strings.Contains(err.Error(), `providers["p"].remote_jwks.async_fetch.fast_listener: false needs a listener`) {
		t.Fatalf("without a listener: %v", err)
	}
}
