package cookie

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	cookiev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/cookie/v3"
	typehttpv3 "github.com/envoyproxy/go-control-plane/envoy/type/http/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/sessionstate"
)

// clock is a settable monotonic clock.
type clock struct{ now time.Duration }

func (c *clock) read() time.Duration { return c.now }

func compile(t *testing.T, ck *typehttpv3.Cookie, c *clock) sessionstate.State {
	t.Helper()
	st, err := Factory{}.CompileSessionState(&cookiev3.CookieBasedSessionState{Cookie: ck}, sessionstate.Context{Monotonic: c.read})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestCookieRoundTrip(t *testing.T) {
	c := &clock{now: 1000 * time.Second}
	st := compile(t, &typehttpv3.Cookie{Name: "sticky", Ttl: durationpb.New(60 * time.Second), Path: "/app",
		Attributes: []*typehttpv3.CookieAttribute{{Name: "SameSite", Value: "Strict"}, {Name: "Secure"}}}, c)

	// A request without the cookie gets one naming the host that served
	// it.
	resp := httpfiltertest.NewHeaders()
	if addr, applies := st.Address("/app/x", httpfiltertest.NewHeaders()); addr != "" || !applies {
		t.Fatalf("no cookie: got %q, %v", addr, applies)
	}
	if !st.Update("", "127.0.0.1:8080", resp) {
		t.Fatal("Update without a session set no cookie")
	}
	set := resp.Values("set-cookie")
	if len(set) != 1 {
		t.Fatalf("set-cookie: %q", set)
	}
	value, attrs, _ := strings.Cut(set[0], "; ")
	if attrs != `Max-Age=60; Path=/app; SameSite=Strict; Secure; HttpOnly` {
		t.Errorf("attributes: %q", attrs)
	}
	value = strings.TrimSuffix(strings.TrimPrefix(value, `sticky="`), `"`)
	addr, expires, ok := decodeCookie(sessionstate.DecodeBase64(value))
	if !ok || addr != "127.0.0.1:8080" || expires != 1060 {
		t.Fatalf("cookie value decodes to %q, %d, %v", addr, expires, ok)
	}

	// The cookie comes back: its host is the session's until it expires.
	req := httpfiltertest.NewHeaders("cookie", "a=b; sticky=\""+value+"\"")
	if got, _ := st.Address("/app", req); got != "127.0.0.1:8080" {
		t.Errorf("fresh cookie: got %q", got)
	}
	if st.Update("127.0.0.1:8080", "127.0.0.1:8080", httpfiltertest.NewHeaders()) {
		t.Error("the same host set the cookie again")
	}
	c.now = 1061 * time.Second
	if got, _ := st.Address("/app", req); got != "" {
		t.Errorf("expired cookie: got %q", got)
	}
}

func TestCookieFormats(t *testing.T) {
	st := compile(t, &typehttpv3.Cookie{Name: "s"}, &clock{now: 5 * time.Second})
	for _, tc := range []struct {
		name, value, want string
	}{
		{"older format: the bare address", b64("127.0.0.1:8080"), "127.0.0.1:8080"},
		// These bytes happen to be a well-formed message (fields 6 and 7,
		// unknown) without an address: Envoy's ParseFromString reads it
		// so too, and the session names no host.
		{"older format that parses as a message", b64("10.0.0.1:80"), ""},
		{"message without expiry", b64(encodeCookie("10.0.0.2:80", 0)), "10.0.0.2:80"},
		{"message expired", b64(encodeCookie("10.0.0.2:80", 4)), ""},
		{"message not expired", b64(encodeCookie("10.0.0.2:80", 5)), "10.0.0.2:80"},
		{"message with an unknown field", b64(encodeCookie("10.0.0.3:80", 0) + "\x18\x01"), "10.0.0.3:80"},
		{"not base64", "%%%", ""},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, applies := st.Address("/", httpfiltertest.NewHeaders("cookie", "s="+tc.value))
			if got != tc.want || !applies {
				t.Errorf("got %q, %v; want %q", got, applies, tc.want)
			}
		})
	}
}

func TestCookieWithoutTTLHasNoExpiry(t *testing.T) {
	st := compile(t, &typehttpv3.Cookie{Name: "s"}, &clock{now: time.Hour})
	resp := httpfiltertest.NewHeaders()
	st.Update("10.0.0.1:80", "10.0.0.2:80", resp)
	v, _ := resp.Get("set-cookie")
	if want := `s="` + b64(encodeCookie("10.0.0.2:80", 0)) + `"; HttpOnly`; v != want {
		t.Errorf("set-cookie %q, want %q", v, want)
	}
}

func TestCookiePath(t *testing.T) {
	for _, tc := range []struct {
		cookie, req string
		want        bool
	}{
		{"", "/anything", true},
		{"/", "/anything", true},
		{"/foo/", "/foo/bar", true},
		{"/foo/", "/foo", false},
		{"/foo", "/foo", true},
		{"/foo", "/foo/bar", true},
		{"/foo", "/foo?x=1", true},
		{"/foo", "/foo#f", true},
		{"/foo", "/foobar", false},
		{"/foo", "/bar", false},
	} {
		if got := pathMatches(tc.cookie, tc.req); got != tc.want {
			t.Errorf("cookie path %q, request %q: %v, want %v", tc.cookie, tc.req, got, tc.want)
		}
	}
}

func TestCookieCompileErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cookie *typehttpv3.Cookie
		want   string
	}{
		{"no name", &typehttpv3.Cookie{}, "cookie.name: must not be empty"},
		{"name not a token", &typehttpv3.Cookie{Name: "a;b"}, "cookie.name:"},
		{"path with ;", &typehttpv3.Cookie{Name: "a", Path: "/x; Domain=evil"}, "cookie.path:"},
		{"attribute value with CRLF", &typehttpv3.Cookie{Name: "a", Attributes: []*typehttpv3.CookieAttribute{{Name: "x", Value: "1\r\nx: y"}}}, "cookie.attributes[0].value:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Factory{}.CompileSessionState(&cookiev3.CookieBasedSessionState{Cookie: tc.cookie}, sessionstate.Context{Monotonic: (&clock{}).read})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func FuzzDecodeCookie(f *testing.F) {
	f.Add(encodeCookie("127.0.0.1:80", 17))
	f.Add("127.0.0.1:80")
	f.Fuzz(func(t *testing.T, v string) {
		addr, expires, ok := decodeCookie(v)
		if !ok {
			return
		}
		// What decodes re-encodes to a message that decodes the same.
		a2, e2, ok2 := decodeCookie(encodeCookie(addr, expires))
		if !ok2 || a2 != addr || e2 != expires {
			t.Fatalf("%q: %q %d, again %q %d %v", v, addr, expires, a2, e2, ok2)
		}
	})
}
