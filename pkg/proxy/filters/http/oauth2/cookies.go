package oauth2

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"

	oauth2v3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/oauth2/v3"
)

// cookieSuffixDelimiter separates a flow cookie's name from its flow id.
const cookieSuffixDelimiter = "."

// cookieNames are the names of the filter's cookies (cookie_names, with
// Envoy's defaults).
type cookieNames struct {
	bearer, hmac, expires, id, refresh, nonce, verifier string
}

// compileCookieNames applies Envoy's defaults to cookie_names.
func compileCookieNames(n *oauth2v3.OAuth2Credentials_CookieNames) cookieNames {
	or := func(v, def string) string {
		if v == "" {
			return def
		}
		return v
	}
	return cookieNames{
		bearer:   or(n.GetBearerToken(), "BearerToken"),
		hmac:     or(n.GetOauthHmac(), "OauthHMAC"),
		expires:  or(n.GetOauthExpires(), "OauthExpires"),
		id:       or(n.GetIdToken(), "IdToken"),
		refresh:  or(n.GetRefreshToken(), "RefreshToken"),
		nonce:    or(n.GetOauthNonce(), "OauthNonce"),
		verifier: or(n.GetCodeVerifier(), "CodeVerifier"),
	}
}

// cookieSettings are one cookie's attributes (a CookieConfig).
type cookieSettings struct {
	sameSite    string
	path        string
	partitioned bool
}

// compileCookieSettings compiles a CookieConfig; nil is Envoy's default:
// path "/", no SameSite.
func compileCookieSettings(c *oauth2v3.CookieConfig) cookieSettings {
	s := cookieSettings{path: "/", partitioned: c.GetPartitioned()}
	if p := c.GetPath(); p != "" {
		s.path = p
	}
	switch c.GetSameSite() {
	case oauth2v3.CookieConfig_STRICT:
		s.sameSite = ";SameSite=Strict"
	case oauth2v3.CookieConfig_LAX:
		s.sameSite = ";SameSite=Lax"
	case oauth2v3.CookieConfig_NONE:
		s.sameSite = ";SameSite=None"
	}
	return s
}

// cookie is one name=value pair of a Cookie header.
type cookie struct{ name, value string }

// parseCookies splits a Cookie header as Envoy does: pairs separated by
// ";", blanks trimmed, the value's surrounding double quotes removed.
func parseCookies(header string) []cookie {
	var out []cookie
	for part := range strings.SplitSeq(header, ";") {
		part = strings.TrimSpace(part)
		name, value, ok := strings.Cut(part, "=")
		if !ok || name == "" {
			continue
		}
		if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
			value = value[1 : len(value)-1]
		}
		out = append(out, cookie{name, value})
	}
	return out
}

// cookieJar is a request's cookies, in order, for reading and rewriting.
type cookieJar []cookie

// get is the first value of the named cookie, "" when absent.
func (j cookieJar) get(name string) string {
	for _, c := range j {
		if c.name == name {
			return c.value
		}
	}
	return ""
}

// has reports whether the named cookie is present.
func (j cookieJar) has(name string) bool {
	for _, c := range j {
		if c.name == name {
			return true
		}
	}
	return false
}

// set replaces every cookie of the name with one of value, or appends it.
func (j cookieJar) set(name, value string) cookieJar {
	found := false
	out := j[:0]
	for _, c := range j {
		if c.name == name {
			if found {
				continue
			}
			found = true
			c.value = value
		}
		out = append(out, c)
	}
	if !found {
		out = append(out, cookie{name, value})
	}
	return out
}

// remove drops the cookies for which drop says so.
func (j cookieJar) remove(drop func(name string) bool) cookieJar {
	out := j[:0]
	for _, c := range j {
		if !drop(c.name) {
			out = append(out, c)
		}
	}
	return out
}

// String is the Cookie header of the jar.
func (j cookieJar) String() string {
	var b strings.Builder
	for i, c := range j {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(c.name)
		b.WriteByte('=')
		b.WriteString(c.value)
	}
	return b.String()
}

// flowCookieValue reads a flow cookie: the one suffixed with the flow id,
// else the unsuffixed one older Envoys set.
func (j cookieJar) flowCookieValue(base, flow string) (string, bool) {
	if v := j.get(base + cookieSuffixDelimiter + flow); v != "" {
		return v, true
	}
	if v := j.get(base); v != "" {
		return v, true
	}
	return "", false
}

// matchesBase reports whether name is base or base suffixed with a flow id.
func matchesBase(name, base string) bool {
	return name == base || (len(name) > len(base)+len(cookieSuffixDelimiter) && strings.HasPrefix(name, base+cookieSuffixDelimiter))
}

// setCookie is a Set-Cookie value of the filter: HttpOnly and secure,
// with Max-Age, the settings' path, SameSite and Partitioned, and the
// cookie domain when configured.
func setCookie(name, value, maxAge, domain string, s cookieSettings) string {
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('=')
	b.WriteString(value)
	if domain != "" {
		b.WriteString(";domain=")
		b.WriteString(domain)
	}
	b.WriteString(";path=")
	b.WriteString(s.path)
	b.WriteString(";Max-Age=")
	b.WriteString(maxAge)
	b.WriteString(";secure;HttpOnly")
	b.WriteString(s.sameSite)
	if s.partitioned {
		b.WriteString(";Partitioned")
	}
	return b.String()
}

// deleteCookie is the Set-Cookie value that removes a cookie, as Envoy
// writes it; names with the __Secure- and __Host- prefixes carry Secure,
// without which browsers ignore it.
func deleteCookie(name, path, domain string) string {
	v := name + "=deleted; path=" + path + "; expires=Thu, 01 Jan 1970 00:00:00 GMT"
	if domain != "" {
		v += ";domain=" + domain
	}
	if strings.HasPrefix(name, "__Secure-") || strings.HasPrefix(name, "__Host-") {
		v += "; Secure"
	}
	return v
}

// flowState is the state parameter of an authorization request: where
// the user was going, the CSRF token, and the flow id.
type flowState struct {
	URL       string `json:"url"`
	CSRFToken string `json:"csrf_token"`
	FlowID    string `json:"flow_id"`
}

// encodeState is the state parameter: the JSON of st, base64url without
// padding.
func encodeState(st flowState) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(st)
	return base64.RawURLEncoding.EncodeToString(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// decodeState reads a state parameter: its JSON and whether it holds the
// url and csrf_token fields (the flow id is optional, as older Envoys
// sent none). The decoded text is returned for error messages.
func decodeState(s string) (st flowState, text string, errMsg string) {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return st, "", "State query param is not a valid JSON: " + s
	}
	text = string(raw)
	var fields map[string]any
	if json.Unmarshal(raw, &fields) != nil {
		return st, text, "State query param is not a valid JSON: " + text
	}
	url, okURL := fields["url"].(string)
	csrf, okCSRF := fields["csrf_token"].(string)
	if !okURL || !okCSRF {
		return st, text, "State query param does not contain url or CSRF token: " + text
	}
	flow, _ := fields["flow_id"].(string)
	return flowState{URL: url, CSRFToken: csrf, FlowID: flow}, text, ""
}
