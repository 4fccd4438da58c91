package adminclient_test

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/controller/adminclient"
)

// TestRawCalls makes untyped calls: the body of a 200 answer, a
// *StatusError for another, and the request the proxy received.
func TestRawCalls(t *testing.T) {
	fake := newFake(t)
	s := session(t, fake)
	body, err := s.Get(t.Context(), "/server_info", nil)
	if err != nil || !strings.Contains(string(body), `"state": "LIVE"`) {
		t.Fatalf("Get /server_info = %q, %v", body, err)
	}
	if _, err := s.Post(t.Context(), "/drain_listeners", url.Values{"inboundonly": {""}}); err != nil {
		t.Fatal(err)
	}
	if got := fake.Drains(); len(got) != 1 || got[0] != "inboundonly" {
		t.Errorf("drains = %q, want [inboundonly]", got)
	}
	_, err = s.Get(t.Context(), "/nowhere", nil)
	var se *adminclient.StatusError
	if !errors.As(err, &se) || se.Code != http.StatusNotFound || se.Method != http.MethodGet || se.Path != "/nowhere" {
		t.Errorf("Get /nowhere: %v, want a 404 StatusError", err)
	}
}
