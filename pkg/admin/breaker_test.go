package admin

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeBreakers is a BreakerEventSource whose event sets the test sends.
type fakeBreakers struct {
	mu          sync.Mutex
	events      chan []byte
	subscribed  chan struct{} // closed by the first subscription
	cancelled   chan struct{} // closed by the first cancel
	cancelCalls int
}

func newFakeBreakers() *fakeBreakers {
	return &fakeBreakers{
		events:     make(chan []byte),
		subscribed: make(chan struct{}),
		cancelled:  make(chan struct{}),
	}
}

func (f *fakeBreakers) SubscribeBreakerEvents() (<-chan []byte, func()) {
	close(f.subscribed)
	return f.events, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.cancelCalls++
		if f.cancelCalls == 1 {
			close(f.cancelled)
		}
	}
}

// sseFrame is one event-stream frame: its data lines, or a comment.
type sseFrame struct {
	comment bool
	data    string
}

// readFrame reads one frame (lines up to a blank line) from an event
// stream, as an EventSource does.
func readFrame(r *bufio.Reader) (sseFrame, error) {
	var f sseFrame
	var data []string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return f, err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			f.data = strings.Join(data, "\n")
			return f, nil
		case strings.HasPrefix(line, ":"):
			f.comment = true
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
}

// waitFor fails the test if ch is not closed within a generous bound.
func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// openStream serves a breaker stream with a short ping interval on
// loopback and opens path on it.
func openStream(t *testing.T, src *fakeBreakers, path string) (*http.Response, context.CancelFunc) {
	t.Helper()
	b := &breakerStream{src: src, pingInterval: 20 * time.Millisecond, writeTimeout: 5 * time.Second}
	srv := newLoopbackServer(t, newAdmin(Options{Log: (&logSink{}).logger()}, b.routes()).Handler())
	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp, cancel
}

func TestBreakerEventStream(t *testing.T) {
	for _, path := range []string{"/breaker_event_stream", "/hystrix_event_stream"} {
		t.Run(path, func(t *testing.T) {
			src := newFakeBreakers()
			resp, leave := openStream(t, src, path)
			defer leave()

			for name, want := range map[string]string{
				"Content-Type":                 "text/event-stream",
				"Cache-Control":                "no-cache",
				"Access-Control-Allow-Origin":  "*",
				"Access-Control-Allow-Headers": "Accept, Cache-Control, X-Requested-With, Last-Event-ID",
				"X-Content-Type-Options":       "nosniff",
			} {
				if got := resp.Header.Get(name); got != want {
					t.Errorf("header %s = %q, want %q", name, got, want)
				}
			}
			if resp.StatusCode != http.StatusOK || !resp.Close {
				t.Errorf("status %d, close %v; want 200 and Connection: close", resp.StatusCode, resp.Close)
			}
			waitFor(t, src.subscribed, "the subscription")

			// Two event sets, each delivered whole between pings.
			r := bufio.NewReader(resp.Body)
			sets := []string{
				"data: {\"type\": \"HystrixCommand\", \"name\": \"c1\"}\n\ndata: {\"type\": \"HystrixThreadPool\", \"name\": \"c1\"}\n\n",
				"data: {\"type\": \"HystrixCommand\", \"name\": \"c2\"}\n\n",
			}
			want := []string{
				`{"type": "HystrixCommand", "name": "c1"}`,
				`{"type": "HystrixThreadPool", "name": "c1"}`,
				`{"type": "HystrixCommand", "name": "c2"}`,
			}
			go func() {
				for _, s := range sets {
					select {
					case src.events <- []byte(s):
					case <-src.cancelled:
						return
					}
				}
			}()
			var got []string
			pings := 0
			for i := 0; i < 1000 && (len(got) < len(want) || pings == 0); i++ {
				f, err := readFrame(r)
				if err != nil {
					t.Fatalf("reading the stream: %v", err)
				}
				if f.comment {
					pings++
					continue
				}
				got = append(got, f.data)
			}
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("events = %q, want %q", got, want)
			}
			if pings == 0 {
				t.Error("no ping comment was sent")
			}

			// The dashboard leaves: the stream unsubscribes.
			leave()
			waitFor(t, src.cancelled, "cancel after the client left")
		})
	}
}

func TestBreakerEventStreamSourceCloses(t *testing.T) {
	src := newFakeBreakers()
	resp, leave := openStream(t, src, "/breaker_event_stream")
	defer leave()
	waitFor(t, src.subscribed, "the subscription")
	close(src.events) // the server stops

	done := make(chan struct{})
	var rest []byte
	var err error
	go func() {
		defer close(done)
		rest, err = io.ReadAll(resp.Body)
	}()
	waitFor(t, done, "the end of the stream")
	if err != nil {
		t.Errorf("stream ended with %v, want a clean end", err)
	}
	if strings.Trim(string(rest), ":\n") != "" {
		t.Errorf("stream carried %q, want only pings", rest)
	}
	waitFor(t, src.cancelled, "cancel after the stream ended")
}

func TestBreakerRoutesNeedASource(t *testing.T) {
	without := New(Options{Log: (&logSink{}).logger()})
	if rec := serve(t, without.Handler(), request{target: "/breaker_event_stream"}); rec.Code != http.StatusNotFound {
		t.Errorf("without a source: status %d, want 404", rec.Code)
	}
	with := New(Options{Breakers: newFakeBreakers(), Log: (&logSink{}).logger()})
	help := serve(t, with.Handler(), request{target: "/help"}).Body.String()
	for _, p := range []string{"  /breaker_event_stream: ", "  /hystrix_event_stream: "} {
		if !strings.Contains(help, p) {
			t.Errorf("/help lacks %q:\n%s", p, help)
		}
	}
}
