package envelope

import (
	"encoding/base64"
	"strings"
	"testing"

	envelopev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/envelope/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/sessionstate"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestEnvelope(t *testing.T) {
	st, err := Factory{}.CompileSessionState(&envelopev3.EnvelopeSessionState{Header: &envelopev3.EnvelopeSessionState_Header{Name: "Session-Id"}}, sessionstate.Context{})
	if err != nil {
		t.Fatal(err)
	}
	// The upstream's response: its session header gets wrapped.
	resp := httpfiltertest.NewHeaders("session-id", "abc")
	st.Update("", "10.0.0.1:80", resp)
	wrapped, _ := resp.Get("session-id")
	if want := b64("10.0.0.1:80") + ";UV:" + b64("abc"); wrapped != want {
		t.Fatalf("wrapped %q, want %q", wrapped, want)
	}
	// A response without the header is left alone.
	empty := httpfiltertest.NewHeaders()
	st.Update("", "10.0.0.1:80", empty)
	if empty.Len() != 0 {
		t.Error("a header was added")
	}

	for _, tc := range []struct {
		name, value, want, header string
	}{
		{"wrapped value", wrapped, "10.0.0.1:80", "abc"},
		{"empty parts skipped", ";" + wrapped + ";", "10.0.0.1:80", "abc"},
		{"no UV part", b64("10.0.0.1:80"), "", b64("10.0.0.1:80")},
		{"bad UV part", b64("10.0.0.1:80") + ";UV:%%", "", b64("10.0.0.1:80") + ";UV:%%"},
		{"only separators", ";;", "", ";;"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httpfiltertest.NewHeaders("session-id", tc.value)
			got, applies := st.Address("/", req)
			if got != tc.want || !applies {
				t.Errorf("address %q, %v; want %q", got, applies, tc.want)
			}
			if h, _ := req.Get("session-id"); h != tc.header {
				t.Errorf("request header %q, want %q", h, tc.header)
			}
		})
	}
}

func TestEnvelopeCompileErrors(t *testing.T) {
	for _, c := range []*envelopev3.EnvelopeSessionState{{}, {Header: &envelopev3.EnvelopeSessionState_Header{Name: "a b"}}} {
		_, err := Factory{}.CompileSessionState(c, sessionstate.Context{})
		if err == nil || !strings.HasPrefix(err.Error(), "header.name: ") {
			t.Errorf("%v: error %v", c, err)
		}
	}
}
