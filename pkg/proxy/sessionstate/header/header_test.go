package header

import (
	"encoding/base64"
	"strings"
	"testing"

	headerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/header/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/sessionstate"
)

func TestHeaderSession(t *testing.T) {
	st, err := Factory{}.CompileSessionState(&headerv3.HeaderBasedSessionState{Name: "X-Session"}, sessionstate.Context{})
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.StdEncoding.EncodeToString([]byte("10.0.0.1:80"))
	if got, applies := st.Address("/any", httpfiltertest.NewHeaders("x-session", enc)); got != "10.0.0.1:80" || !applies {
		t.Errorf("got %q, %v", got, applies)
	}
	if got, _ := st.Address("/any", httpfiltertest.NewHeaders("x-session", "%%")); got != "" {
		t.Errorf("bad base64: got %q", got)
	}
	if got, applies := st.Address("/any", httpfiltertest.NewHeaders()); got != "" || !applies {
		t.Errorf("no header: got %q, %v", got, applies)
	}
	resp := httpfiltertest.NewHeaders()
	if st.Update("10.0.0.1:80", "10.0.0.1:80", resp) || resp.Len() != 0 {
		t.Error("the same host named again")
	}
	if !st.Update("10.0.0.1:80", "10.0.0.2:80", resp) {
		t.Fatal("another host not named")
	}
	if v, _ := resp.Get("x-session"); v != base64.StdEncoding.EncodeToString([]byte("10.0.0.2:80")) {
		t.Errorf("x-session %q", v)
	}
}

func TestHeaderCompileErrors(t *testing.T) {
	for _, name := range []string{"", "a b", "x\r\ny"} {
		_, err := Factory{}.CompileSessionState(&headerv3.HeaderBasedSessionState{Name: name}, sessionstate.Context{})
		if err == nil || !strings.HasPrefix(err.Error(), "name: ") {
			t.Errorf("%q: error %v", name, err)
		}
	}
}
