package adminclient_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/outrigger-dev/outrigger/pkg/controller/adminclient"
	"github.com/outrigger-dev/outrigger/pkg/controller/adminclient/admintest"
)

// newFake starts a fake admin interface on a loopback port.
func newFake(t *testing.T) *admintest.Server {
	t.Helper()
	fake, err := admintest.New("127.0.0.1:0", map[string]string{"static.key": "s"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	return fake
}

// endpoint names the fake as a pod would be named.
func endpoint(fake *admintest.Server) adminclient.Endpoint {
	return adminclient.Endpoint{Namespace: "ns", Pod: "pod-a", UID: "uid-a", IP: fake.IP(), Port: fake.Port()}
}

// session opens a direct session to fake.
func session(t *testing.T, fake *admintest.Server) *adminclient.Session {
	t.Helper()
	c := adminclient.New(adminclient.NewDirect(time.Second), 5*time.Second)
	s, err := c.Session(t.Context(), endpoint(fake))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestCalls makes each typed call and checks the request that reached the
// proxy and the proxy's state after it.
func TestCalls(t *testing.T) {
	cases := map[string]struct {
		call      func(context.Context, *adminclient.Session) error
		wantCalls []admintest.Call
		check     func(t *testing.T, fake *admintest.Server)
	}{
		"runtime_modify sets and deletes": {
			call: func(ctx context.Context, s *adminclient.Session) error {
				if err := s.RuntimeModify(ctx, map[string]string{"b": "2", "a&b": "x y"}); err != nil {
					return err
				}
				return s.RuntimeModify(ctx, map[string]string{"b": ""})
			},
			wantCalls: []admintest.Call{
				{Method: "POST", Path: "/runtime_modify", Query: "a%26b=x+y&b=2"},
				{Method: "POST", Path: "/runtime_modify", Query: "b"},
			},
			check: func(t *testing.T, fake *admintest.Server) {
				if diff := cmp.Diff(map[string]string{"a&b": "x y"}, fake.AdminRuntime()); diff != "" {
					t.Errorf("admin layer (-want +got):\n%s", diff)
				}
			},
		},
		"runtime_modify with nothing makes no call": {
			call: func(ctx context.Context, s *adminclient.Session) error {
				return s.RuntimeModify(ctx, nil)
			},
		},
		"all log levels": {
			call: func(ctx context.Context, s *adminclient.Session) error {
				return s.SetAllLogLevels(ctx, "debug")
			},
			wantCalls: []admintest.Call{{Method: "POST", Path: "/logging", Query: "level=debug"}},
			check: func(t *testing.T, fake *admintest.Server) {
				if got := fake.LogLevel("upstream"); got != "debug" {
					t.Errorf("upstream level %q, want debug", got)
				}
			},
		},
		"some log levels in one call": {
			call: func(ctx context.Context, s *adminclient.Session) error {
				return s.SetLogLevels(ctx, map[string]string{"http": "trace", "admin": "error"})
			},
			wantCalls: []admintest.Call{{Method: "POST", Path: "/logging", Query: "paths=admin%3Aerror%2Chttp%3Atrace"}},
			check: func(t *testing.T, fake *admintest.Server) {
				if fake.LogLevel("http") != "trace" || fake.LogLevel("admin") != "error" || fake.LogLevel("main") != "info" {
					t.Errorf("levels http=%s admin=%s main=%s", fake.LogLevel("http"), fake.LogLevel("admin"), fake.LogLevel("main"))
				}
			},
		},
		"health checks fail then pass": {
			call: func(ctx context.Context, s *adminclient.Session) error {
				if err := s.FailHealthChecks(ctx); err != nil {
					return err
				}
				return s.PassHealthChecks(ctx)
			},
			wantCalls: []admintest.Call{
				{Method: "POST", Path: "/healthcheck/fail"},
				{Method: "POST", Path: "/healthcheck/ok"},
			},
			check: func(t *testing.T, fake *admintest.Server) {
				if fake.HealthChecksFailed() {
					t.Error("health checks still failing")
				}
			},
		},
		"drain with flags": {
			call: func(ctx context.Context, s *adminclient.Session) error {
				return s.DrainListeners(ctx, adminclient.DrainOptions{InboundOnly: true, Graceful: true})
			},
			wantCalls: []admintest.Call{{Method: "POST", Path: "/drain_listeners", Query: "graceful&inboundonly"}},
		},
		"drain without flags": {
			call: func(ctx context.Context, s *adminclient.Session) error {
				return s.DrainListeners(ctx, adminclient.DrainOptions{})
			},
			wantCalls: []admintest.Call{{Method: "POST", Path: "/drain_listeners"}},
		},
		"quit": {
			call: func(ctx context.Context, s *adminclient.Session) error {
				return s.Quit(ctx)
			},
			wantCalls: []admintest.Call{{Method: "POST", Path: "/quitquitquit"}},
		},
		"active connections leave out admin and workers": {
			call: func(ctx context.Context, s *adminclient.Session) error {
				n, err := s.ActiveConnections(ctx)
				if err == nil && n != 7 {
					return errors.New("wrong count")
				}
				return err
			},
			wantCalls: []admintest.Call{{Method: "GET", Path: "/stats", Query: "filter=%5Elistener%5C..%2A%5C.downstream_cx_active%24&format=json"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			fake := newFake(t)
			fake.SetActiveConnections(7)
			if err := tc.call(t.Context(), session(t, fake)); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantCalls, fake.Calls("")); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			if tc.check != nil {
				tc.check(t, fake)
			}
		})
	}
}

// TestReads checks the reads that return values.
func TestReads(t *testing.T) {
	fake := newFake(t)
	fake.SetAdminRuntime("a", "1")
	fake.Backdate(90 * time.Second)
	s := session(t, fake)

	info, err := s.ServerInfo(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.State != "LIVE" || info.Uptime < 90*time.Second || info.Uptime > 100*time.Second {
		t.Errorf("server info %+v, want LIVE and about 90s", info)
	}

	rt, err := s.Runtime(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]adminclient.RuntimeEntry{
		"a":          {LayerValues: []string{"", "1"}, FinalValue: "1"},
		"static.key": {LayerValues: []string{"s", ""}, FinalValue: "s"},
	}
	if diff := cmp.Diff(want, rt.Entries); diff != "" {
		t.Errorf("runtime (-want +got):\n%s", diff)
	}

	levels, err := s.LogLevels(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if levels["http"] != "info" || len(levels) != 7 {
		t.Errorf("log levels %v", levels)
	}
}

// TestErrors checks that failures name the call and the pod.
func TestErrors(t *testing.T) {
	t.Run("answer other than 200", func(t *testing.T) {
		fake := newFake(t)
		fake.FailNext("/healthcheck/fail", 1)
		err := session(t, fake).FailHealthChecks(t.Context())
		var se *adminclient.StatusError
		if !errors.As(err, &se) || se.Code != http.StatusInternalServerError || se.Body != "injected failure" {
			t.Fatalf("got %v, want a 500 StatusError", err)
		}
		if got := err.Error(); got != "POST /healthcheck/fail: 500 Internal Server Error: injected failure" {
			t.Errorf("message %q", got)
		}
	})
	t.Run("unreachable pod", func(t *testing.T) {
		c := adminclient.New(adminclient.NewDirect(time.Second), 5*time.Second)
		s, err := c.Session(t.Context(), adminclient.Endpoint{Namespace: "ns", Pod: "pod-a", UID: "uid-a", IP: "127.0.0.1", Port: refusingPort(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		err = s.PassHealthChecks(t.Context())
		if err == nil || !strings.Contains(err.Error(), "POST /healthcheck/ok on ns/pod-a:") || !strings.Contains(err.Error(), "dial tcp") {
			t.Fatalf("got %v, want a failed dial naming the call and pod", err)
		}
	})
	t.Run("malformed answer", func(t *testing.T) {
		junk := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte("<html>not the admin</html>"))
		}))
		t.Cleanup(junk.Close)
		u, _ := url.Parse(junk.URL)
		port, _ := strconv.Atoi(u.Port())
		c := adminclient.New(adminclient.NewDirect(time.Second), 5*time.Second)
		s, err := c.Session(t.Context(), adminclient.Endpoint{Namespace: "ns", Pod: "pod-a", IP: u.Hostname(), Port: int32(port)})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = s.Close() }()
		_, err = s.ServerInfo(t.Context())
		if err == nil || !strings.Contains(err.Error(), "/server_info on ns/pod-a:") || !strings.Contains(err.Error(), "parse server info") {
			t.Fatalf("got %v, want a parse error naming the pod", err)
		}
	})
}

// refusingPort returns a loopback port where connections are refused for
// the rest of the test. A stopped listener's port is not enough: parallel
// tests binding port 0 may be given it again. A socket bound but never
// listening holds the port and refuses every connection.
func refusingPort(t *testing.T) int32 {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return int32(sa.(*unix.SockaddrInet4).Port)
}

// TestObserver tells the observer about every call, its path without the
// query, and its error.
func TestObserver(t *testing.T) {
	fake := newFake(t)
	type seen struct {
		method, path string
		ok           bool
	}
	var calls []seen
	c := adminclient.New(adminclient.NewDirect(time.Second), 5*time.Second, adminclient.WithObserver(func(method, path string, took time.Duration, err error) {
		if took < 0 {
			t.Errorf("negative duration %s", took)
		}
		calls = append(calls, seen{method, path, err == nil})
	}))
	s, err := c.Session(t.Context(), endpoint(fake))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	if _, err := s.ServerInfo(t.Context()); err != nil {
		t.Fatal(err)
	}
	fake.FailNext("/runtime_modify", 1)
	if err := s.RuntimeModify(t.Context(), map[string]string{"secret.key": "hidden"}); err == nil {
		t.Fatal("the injected failure did not fail the call")
	}
	want := []seen{{"GET", "/server_info", true}, {"POST", "/runtime_modify", false}}
	if diff := cmp.Diff(want, calls, cmp.AllowUnexported(seen{})); diff != "" {
		t.Errorf("observed calls (-want +got):\n%s", diff)
	}
}
