package admin

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeTap is a TapSource that refuses bodies starting with "bad" and
// otherwise attaches a session whose traces the test sends.
type fakeTap struct {
	traces   chan []byte
	detached chan struct{}
	// done ends the session from the server's side when closed (nil:
	// never).
	done chan struct{}
	// absent makes HasFilters false: no tap filter is configured.
	absent atomic.Bool
}

func (f *fakeTap) HasFilters() bool { return !f.absent.Load() }

func (f *fakeTap) AttachTap(body []byte) (TapSession, error) {
	if strings.HasPrefix(string(body), "bad") {
		return nil, errors.New("Unknown config id 'bad'. No extension has registered with this id.")
	}
	return f, nil
}

func (f *fakeTap) Traces() <-chan []byte { return f.traces }
func (f *fakeTap) Detach()               { close(f.detached) }
func (f *fakeTap) Done() <-chan struct{} { return f.done }

func TestTap(t *testing.T) {
	src := &fakeTap{traces: make(chan []byte, 2), detached: make(chan struct{})}
	srv := newLoopbackServer(t, newAdmin(Options{Log: (&logSink{}).logger(), Tap: src}, nil).Handler())
	post := func(ctx context.Context, body string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/tap", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = resp.Body.Close() })
		return resp
	}
	for body, want := range map[string]string{
		"":    "/tap requires a JSON/YAML body",
		"bad": "Unknown config id 'bad'. No extension has registered with this id.",
	} {
		resp := post(t.Context(), body)
		got, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusBadRequest || string(got) != want {
			t.Errorf("body %q: %d %q, want 400 %q", body, resp.StatusCode, got, want)
		}
	}

	ctx, cancel := context.WithCancel(t.Context())
	resp := post(ctx, "config_id: x")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != ContentTypeJSON {
		t.Fatalf("status %d, type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	src.traces <- []byte("{\n \"a\": 1\n}\n")
	src.traces <- []byte("{\n \"b\": 2\n}\n")
	r := bufio.NewReader(resp.Body)
	var lines []string
	for len(lines) < 6 {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		lines = append(lines, line)
	}
	if got := strings.Join(lines, ""); got != "{\n \"a\": 1\n}\n{\n \"b\": 2\n}\n" {
		t.Errorf("traces %q", got)
	}
	cancel()
	waitFor(t, src.detached, "the detach after the client left")
}

// TestTapSessionEnds: a session the server ends completes its response,
// after the traces already queued.
func TestTapSessionEnds(t *testing.T) {
	src := &fakeTap{traces: make(chan []byte, 2), detached: make(chan struct{}), done: make(chan struct{})}
	srv := newLoopbackServer(t, newAdmin(Options{Log: (&logSink{}).logger(), Tap: src}, nil).Handler())
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/tap", strings.NewReader("config_id: x"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	src.traces <- []byte("{\n \"a\": 1\n}\n")
	close(src.done)
	got, err := io.ReadAll(resp.Body)
	if err != nil || string(got) != "{\n \"a\": 1\n}\n" {
		t.Errorf("stream %q, %v: want the queued trace, then its end", got, err)
	}
	waitFor(t, src.detached, "the detach after the session ended")
}

// TestTapComesAndGoes: /tap is in /help, on the home page and served only
// while a tap filter with admin_config is configured.
func TestTapComesAndGoes(t *testing.T) {
	src := &fakeTap{traces: make(chan []byte), detached: make(chan struct{})}
	src.absent.Store(true)
	srv := newLoopbackServer(t, newAdmin(Options{Log: (&logSink{}).logger(), Tap: src}, nil).Handler())
	get := func(method, path string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, strings.NewReader("bad"))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, present := range []bool{false, true, false} {
		src.absent.Store(!present)
		_, help := get(http.MethodGet, "/help")
		_, home := get(http.MethodGet, "/")
		code, _ := get(http.MethodPost, "/tap")
		// The home page links endpoints relative to itself.
		if strings.Contains(help, "/tap") != present || strings.Contains(home, "action='tap'") != present {
			t.Errorf("present=%v: /tap in help %v, in home %v", present, strings.Contains(help, "/tap"), strings.Contains(home, "action='tap'"))
		}
		want := http.StatusNotFound
		if present {
			want = http.StatusBadRequest // the fake's refusal of "bad"
		}
		if code != want {
			t.Errorf("present=%v: POST /tap %d, want %d", present, code, want)
		}
	}
}
