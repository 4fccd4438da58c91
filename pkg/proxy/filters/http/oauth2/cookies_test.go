package oauth2

import (
	"reflect"
	"testing"

	oauth2v3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/oauth2/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

func TestParseCookies(t *testing.T) {
	got := parseCookies(` a=1;b="two" ; c=x=y;;noval; =empty;d=`)
	want := []cookie{{"a", "1"}, {"b", "two"}, {"c", "x=y"}, {"d", ""}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parseCookies = %v, want %v", got, want)
	}
	jar := cookieJar(got)
	jar = jar.set("b", "2").set("e", "5").remove(func(n string) bool { return n == "a" })
	if s := jar.String(); s != "b=2; c=x=y; d=; e=5" {
		t.Fatalf("jar = %q", s)
	}
	flows := cookieJar(parseCookies("OauthNonce.abc=1; OauthNonce=2"))
	if v, ok := flows.flowCookieValue("OauthNonce", "abc"); !ok || v != "1" {
		t.Fatalf("suffixed flow cookie = %q, %v", v, ok)
	}
	if v, ok := flows.flowCookieValue("OauthNonce", "zzz"); !ok || v != "2" {
		t.Fatalf("legacy flow cookie = %q, %v", v, ok)
	}
	if !matchesBase("OauthNonce.abc", "OauthNonce") || !matchesBase("OauthNonce", "OauthNonce") || matchesBase("OauthNonce.", "OauthNonce") || matchesBase("OauthNoncex", "OauthNonce") {
		t.Fatal("matchesBase verdicts are wrong")
	}
}

func TestSetCookieFormat(t *testing.T) {
	if got := setCookie("BearerToken", "v", "60", "", compileCookieSettings(nil)); got != "BearerToken=v;path=/;Max-Age=60;secure;HttpOnly" {
		t.Fatalf("default cookie = %q", got)
	}
	s := compileCookieSettings(&oauth2v3.CookieConfig{SameSite: oauth2v3.CookieConfig_STRICT, Path: "/api", Partitioned: true})
	if got := setCookie("IdToken", "v", "5", "example.com", s); got != "IdToken=v;domain=example.com;path=/api;Max-Age=5;secure;HttpOnly;SameSite=Strict;Partitioned" {
		t.Fatalf("configured cookie = %q", got)
	}
	for ss, want := range map[oauth2v3.CookieConfig_SameSite]string{
		oauth2v3.CookieConfig_LAX: ";SameSite=Lax", oauth2v3.CookieConfig_NONE: ";SameSite=None", oauth2v3.CookieConfig_DISABLED: "",
	} {
		if got := compileCookieSettings(&oauth2v3.CookieConfig{SameSite: ss}).sameSite; got != want {
			t.Errorf("SameSite %v = %q, want %q", ss, got, want)
		}
	}
	if got := deleteCookie("OauthHMAC", "/", ""); got != "OauthHMAC=deleted; path=/; expires=Thu, 01 Jan 1970 00:00:00 GMT" {
		t.Fatalf("deletion = %q", got)
	}
	if got := deleteCookie("__Host-T", "/", "example.com"); got != "__Host-T=deleted; path=/; expires=Thu, 01 Jan 1970 00:00:00 GMT;domain=example.com; Secure" {
		t.Fatalf("prefixed deletion = %q", got)
	}
	names := compileCookieNames(&oauth2v3.OAuth2Credentials_CookieNames{IdToken: "Id"})
	if names != (cookieNames{"BearerToken", "OauthHMAC", "OauthExpires", "Id", "RefreshToken", "OauthNonce", "CodeVerifier"}) {
		t.Fatalf("cookie names = %+v", names)
	}
}

func TestEncodings(t *testing.T) {
	if got := urlEncode("https://a.example/cb?x=1 2~_.-"); got != "https%3A%2F%2Fa.example%2Fcb%3Fx%3D1%202~_.-" {
		t.Fatalf("urlEncode = %q", got)
	}
	if got := formEncode("a:b/c=d&e?f+g h%~\n", formReserved); got != "a%3Ab%2Fc%3Dd%26e%3Ff%2Bg h%%7E%0A" {
		t.Fatalf("formEncode = %q", got)
	}
	for uri, want := range map[string][2]string{
		"https://idp.example/oauth/token": {"idp.example", "/oauth/token"},
		"oauth.com/token":                 {"oauth.com", "/token"},
		"idp:8443":                        {"idp:8443", "/"},
	} {
		if h, p := httpfilter.HostPath(uri); h != want[0] || p != want[1] {
			t.Errorf("hostPath(%q) = %q, %q", uri, h, p)
		}
	}
}

func TestHostAllowed(t *testing.T) {
	domains := []string{"example.com", "*.apps.example", "::1"}
	for u, want := range map[string]bool{
		"https://example.com/x":        true,
		"https://EXAMPLE.com:8443/x":   true,
		"https://a.apps.example/":      true,
		"https://a.b.apps.example":     true,
		"https://apps.example/":        false,
		"https://evil.com/example.com": false,
		"http://[::1]:80/":             true,
		"not a url":                    false,
	} {
		if got := hostAllowed(u, domains); got != want {
			t.Errorf("hostAllowed(%q) = %v", u, got)
		}
	}
	if !hostAllowed("anything", nil) {
		t.Fatal("an empty list refuses")
	}
}

func TestJWTExp(t *testing.T) {
	tok := jwtWithClaims(`{"exp":1700000100}`)
	if exp, ok := jwtExp(tok); !ok || exp != 1700000100 {
		t.Fatalf("jwtExp = %d, %v", exp, ok)
	}
	for _, bad := range []string{"rt-1", "a.b.c", jwtWithClaims(`{"sub":"x"}`), jwtWithClaims(`{"exp":0}`)} {
		if _, ok := jwtExp(bad); ok {
			t.Errorf("jwtExp(%q) found an exp", bad)
		}
	}
}
