package oauth2

import (
	"encoding/base64"
	"encoding/json"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// callbackResult is what a callback's query and cookies yield.
type callbackResult struct {
	code, url, flow string
	// errMsg says why the callback is refused ("" when it is not).
	errMsg string
}

// validateCallback checks the authorization server's redirect back: an
// error answer, the code and state parameters, the state's CSRF token
// against the flow's nonce cookie, and the URL the user was going to.
func (f *filter) validateCallback(jar cookieJar, path string) callbackResult {
	_, rawQuery, _ := strings.Cut(path, "?")
	rawQuery, _, _ = strings.Cut(rawQuery, "#")
	first := func(name string) (string, bool) {
		for pair := range strings.SplitSeq(rawQuery, "&") {
			k, v, _ := strings.Cut(pair, "=")
			if k == name {
				return v, true
			}
		}
		return "", false
	}
	if _, ok := first("error"); ok {
		var flow string
		if st, ok := first("state"); ok {
			flow = f.validateState(jar, st).flow
		}
		return callbackResult{flow: flow, errMsg: "OAuth server returned an error: ?" + rawQuery}
	}
	code, okCode := first("code")
	state, okState := first("state")
	if !okCode || !okState {
		return callbackResult{errMsg: "Code or state query param does not exist: ?" + rawQuery}
	}
	r := f.validateState(jar, state)
	r.code = code
	return r
}

// validateState decodes the state parameter and checks its CSRF token
// against the flow's nonce cookie and the secret; only then is its flow
// id trusted.
func (f *filter) validateState(jar cookieJar, state string) callbackResult {
	st, _, errMsg := decodeState(state)
	if errMsg != "" {
		return callbackResult{errMsg: errMsg}
	}
	nonce, ok := jar.flowCookieValue(f.c.cookies.nonce, st.FlowID)
	if !ok || !constantEqual(nonce, st.CSRFToken) || !validCSRFToken(f.hmacKey, st.CSRFToken) {
		return callbackResult{errMsg: "CSRF token validation failed"}
	}
	if u, err := url.Parse(st.URL); err != nil || u.Scheme == "" || u.Host == "" {
		return callbackResult{flow: st.FlowID, errMsg: "State url can not be initialized: " + st.URL}
	}
	if !hostAllowed(st.URL, f.c.allowedDomains) {
		return callbackResult{flow: st.FlowID, errMsg: "State url host is not in the allowed redirect domains: " + st.URL}
	}
	return callbackResult{url: st.URL, flow: st.FlowID}
}

// hostAllowed checks the host of an absolute URL against
// allowed_redirect_domains (an empty list allows all): an exact name, or
// "*.suffix" for its subdomains.
func hostAllowed(rawURL string, domains []string) bool {
	if len(domains) == 0 {
		return true
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return false
	}
	host := u.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	for _, d := range domains {
		if suffix, ok := strings.CutPrefix(d, "*"); ok && strings.HasPrefix(suffix, ".") {
			if strings.HasSuffix(host, suffix) && len(host) > len(suffix) {
				return true
			}
			continue
		}
		if strings.EqualFold(host, d) {
			return true
		}
	}
	return false
}

// updateSession records the tokens of an exchange as the session to
// write, leaving out those whose cookies are disabled.
func (f *filter) updateSession(t tokens) {
	c := f.c
	s := session{}
	if !c.disableAccessCookie {
		s.access = t.access
	}
	if !c.disableIDCookie {
		s.id = t.id
	}
	if c.useRefreshToken && !c.disableRefresh {
		s.refresh = t.refresh
	}
	secs := int64(t.expiresIn / time.Second)
	s.expiresIn = strconv.FormatInt(secs, 10)
	now := c.now()
	s.refreshExpiresIn = s.expiresIn
	if c.useRefreshToken {
		s.refreshExpiresIn = lifetime(t.refresh, now, int64(c.refreshTokenExpiresIn/time.Second))
	}
	s.idExpiresIn = s.expiresIn
	if !c.accessExpiryForID && t.id != "" {
		s.idExpiresIn = lifetime(t.id, now, secs)
	}
	s.newExpires = strconv.FormatInt(now.Add(t.expiresIn).Unix(), 10)
	f.session = s
}

// lifetime is the seconds left before a JWT's exp claim ("0" when past),
// or def when the token is no JWT or has no exp.
func lifetime(token string, now time.Time, def int64) string {
	exp, ok := jwtExp(token)
	if !ok {
		return strconv.FormatInt(def, 10)
	}
	if left := exp - now.Unix(); left > 0 {
		return strconv.FormatInt(left, 10)
	}
	return "0"
}

// jwtExp reads the exp claim of a JWT (without verifying it: it only
// sets a cookie's lifetime).
func jwtExp(token string) (int64, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return 0, false
	}
	var header map[string]any
	if raw, err := base64.RawURLEncoding.DecodeString(parts[0]); err != nil || json.Unmarshal(raw, &header) != nil {
		return 0, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return 0, false
	}
	var claims struct {
		Exp json.Number `json:"exp"`
	}
	if json.Unmarshal(raw, &claims) != nil || claims.Exp == "" {
		return 0, false
	}
	exp, err := strconv.ParseInt(string(claims.Exp), 10, 64)
	if err != nil || exp == 0 {
		return 0, false
	}
	return exp, true
}

// sessionHMAC is the HMAC cookie's value for the session.
func (f *filter) sessionHMAC() string {
	domain := f.host
	if f.c.cookieDomain != "" {
		domain = f.c.cookieDomain
	}
	s := f.session
	return sessionHMAC(f.hmacKey, domain, s.newExpires, s.access, s.id, s.refresh)
}

// addSessionCookies writes the session's cookies with add: the HMAC and
// expiry, and each token (encrypted unless disabled), or the deletion of
// a token cookie the request carried when the session has no such token.
func (f *filter) addSessionCookies(reqJar cookieJar, add func(string)) {
	c, s := f.c, f.session
	add(setCookie(c.cookies.hmac, f.sessionHMAC(), s.expiresIn, c.cookieDomain, c.hmacCookie))
	add(setCookie(c.cookies.expires, s.newExpires, s.expiresIn, c.cookieDomain, c.expiresCookie))
	for _, tk := range []struct {
		name, value, maxAge string
		settings            cookieSettings
	}{
		{c.cookies.bearer, s.access, s.expiresIn, c.bearerCookie},
		{c.cookies.id, s.id, s.idExpiresIn, c.idCookie},
		{c.cookies.refresh, s.refresh, s.refreshExpiresIn, c.refreshCookie},
	} {
		if tk.value == "" {
			if reqJar.has(tk.name) {
				add(deleteCookie(tk.name, tk.settings.path, c.cookieDomain))
			}
			f.deleteChunks(tk.name, tk.settings.path, nil, add)
			continue
		}
		written := c.chunking.split(tk.name, f.seal(tk.value), tk.maxAge, c.cookieDomain, tk.settings)
		for _, v := range written {
			add(v)
		}
		if len(written) > 1 && f.hadWhole(tk.name) {
			// The chunks replace the whole cookie the browser holds.
			add(deleteCookie(tk.name, tk.settings.path, c.cookieDomain))
		}
		f.deleteChunks(tk.name, tk.settings.path, written, add)
	}
}

// hadWhole reports whether the request carried the token cookie whole
// (not as chunks).
func (f *filter) hadWhole(name string) bool {
	return f.wholeCookies != nil && f.wholeCookies[name]
}

// deleteChunks deletes the chunk cookies of a token the request carried
// that the Set-Cookie values written do not set again.
func (f *filter) deleteChunks(name, path string, written []string, add func(string)) {
	for _, n := range f.chunks[name] {
		rewritten := false
		for _, w := range written {
			if len(w) > len(n) && w[:len(n)] == n && w[len(n)] == '=' {
				rewritten = true
				break
			}
		}
		if !rewritten {
			add(deleteCookie(n, path, f.c.cookieDomain))
		}
	}
}

// seal encrypts a token for its cookie, unless encryption is disabled.
func (f *filter) seal(token string) string {
	if f.c.disableEncryption {
		return token
	}
	return encrypt(token, f.hmacKey)
}
