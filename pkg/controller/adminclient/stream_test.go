package adminclient_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/controller/adminclient"
)

// TestStream reads a streamed answer piece by piece while the server
// still holds it open, gets a *StatusError for a refusal, and an error
// when the status does not come within the call timeout.
func TestStream(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/tap":
			if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || string(body) != `{"config_id":"x"}` {
				http.Error(w, "bad request "+r.Method+" "+string(body), http.StatusTeapot)
				return
			}
			for i := range 2 {
				_, _ = io.WriteString(w, "trace "+strconv.Itoa(i)+"\n")
				w.(http.Flusher).Flush()
			}
			select {
			case <-r.Context().Done():
			case <-release:
			}
		case "/busy":
			http.Error(w, "An attached /tap admin stream already exists. Detach it.", http.StatusBadRequest)
		case "/silent":
			<-release
		}
	}))
	defer srv.Close()
	defer close(release)
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	c := adminclient.New(adminclient.NewDirect(time.Second), 500*time.Millisecond)
	s, err := c.Session(t.Context(), adminclient.Endpoint{Namespace: "ns", Pod: "p", IP: host, Port: int32(p)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()

	body, err := s.Stream(t.Context(), http.MethodPost, "/tap", []byte(`{"config_id":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	// The call timeout has passed by the time the second line is read:
	// it bounds only the wait for the status.
	time.Sleep(600 * time.Millisecond)
	r := bufio.NewReader(body)
	for i := range 2 {
		line, err := r.ReadString('\n')
		if want := "trace " + strconv.Itoa(i) + "\n"; err != nil || line != want {
			t.Fatalf("line %d = %q, %v; want %q", i, line, err, want)
		}
	}
	if err := body.Close(); err != nil {
		t.Errorf("close: %v", err)
	}

	_, err = s.Stream(t.Context(), http.MethodPost, "/busy", nil)
	var se *adminclient.StatusError
	if !errors.As(err, &se) || se.Code != http.StatusBadRequest || se.Body != "An attached /tap admin stream already exists. Detach it." {
		t.Errorf("Stream /busy: %v, want a 400 StatusError with the proxy's message", err)
	}

	_, err = s.Stream(t.Context(), http.MethodPost, "/silent", nil)
	if err == nil || !strings.Contains(err.Error(), "no answer within 500ms") {
		t.Errorf("Stream /silent: %v, want a timeout", err)
	}
}
