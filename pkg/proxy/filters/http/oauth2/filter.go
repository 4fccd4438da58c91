package oauth2

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// Envoy's %RESPONSE_CODE_DETAILS% of the filter's redirects, and its
// reply bodies.
const (
	detailsRace               = "oauth.race_redirect"
	detailsLoggedIn           = "oauth.logged_in"
	detailsMissingCredentials = "oauth.missing_credentials"
	detailsSignOut            = "oauth.sign_out"
	unauthorizedBody          = "OAuth flow failed."
	unavailableBody           = "Service Unavailable"
)

// The headers the filter tells the upstream of a request let through
// after a failure (allow_failed_matcher) with; a client's own are
// removed.
const (
	headerOAuthStatus        = "x-envoy-oauth-status"
	headerOAuthFailureReason = "x-envoy-oauth-failure-reason"
)

// filter is one request's oauth2 filter.
type filter struct {
	// def is the filter's own configuration (nil without one); name the
	// key of its per-route configurations.
	def  *config
	name string

	// The request's active configuration, secrets and Host.
	c                 *config
	hmacKey, clientSc []byte
	host              string
	// replyHeaders go on the filter's local reply (the redirects'
	// Location and Set-Cookie) or, after a refresh, on the response.
	replyHeaders [][2]string
	// session is what the filter writes in cookies after an exchange.
	session session
	// refreshed is set when the request goes on with refreshed tokens:
	// their cookies go on the response; jar is then the request's
	// cookies, whose token cookies the response deletes when the new
	// session has none.
	refreshed bool
	jar       cookieJar
	// chunks are the token cookies' chunk cookies the request carried,
	// deleted when the tokens are written again or the user signs out.
	chunks chunkNames
	// wholeCookies are the token cookies the request carried whole.
	wholeCookies map[string]bool
}

var (
	_ httpfilter.Decoder = (*filter)(nil)
	_ httpfilter.Encoder = (*filter)(nil)
)

// session is the state written in a user's cookies.
type session struct {
	access, id, refresh string
	// expiresIn is the access token's lifetime in seconds, newExpires
	// the epoch second it ends; refreshExpiresIn and idExpiresIn the
	// Max-Age of those cookies.
	expiresIn, newExpires, refreshExpiresIn, idExpiresIn string
}

// DecodeHeaders implements httpfilter.Decoder, in Envoy's order: pass
// through, sign out, a valid session, a refresh, the redirect to the
// authorization server, and the callback from it.
func (f *filter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	h := s.RequestHeaders()
	// Only the filter may say these.
	h.Del(headerOAuthStatus)
	h.Del(headerOAuthFailureReason)
	c := f.def
	if rc, ok := s.RouteConfig(f.name).(*config); ok && rc != nil {
		c = rc
	}
	if c == nil {
		return httpfilter.Continue
	}
	f.c = c
	if c.forwardID != "" {
		// Only the filter may say it: a client's would pass for a
		// validated ID token.
		h.Del(c.forwardID)
	}
	req := s.Request()
	if anyMatches(c.passThrough, req) {
		c.stats.passthrough.Inc()
		return httpfilter.Continue
	}
	var ok bool
	f.clientSc, f.hmacKey, ok = c.secrets()
	if !ok {
		c.stats.failure.Inc()
		s.SendLocalReply(503, unavailableBody, 0, details("OAuth2 secrets are not ready"))
		return httpfilter.Stop
	}
	jar := f.decryptCookies(s)
	if !c.preserveAuthorization {
		// Nothing vouches for it; forward_bearer_token sets it below.
		h.Del("authorization")
	}
	f.host = req.Host
	path := req.Path
	fromServer := c.redirectMatcher.Match(pathOnly(path))
	if c.signoutMatcher.Match(pathOnly(path)) {
		return f.signOut(s, jar)
	}

	access, id, refresh := jar.get(c.cookies.bearer), jar.get(c.cookies.id), jar.get(c.cookies.refresh)
	if f.sessionValid(jar, access, id, refresh) {
		c.stats.success.Inc()
		if c.forwardBearer && access != "" {
			h.Set("authorization", "Bearer "+access)
		}
		f.forwardIDToken(s, id)
		if fromServer {
			return f.raceRedirect(s, jar, path)
		}
		setCookieHeader(s, c.removeFlowCookies(jar))
		return httpfilter.Continue
	}
	if !fromServer {
		if c.useRefreshToken && refresh != "" {
			return f.refresh(s, refresh)
		}
		switch {
		case f.allowFailed(s):
			f.continueFailed(s, "Unauthorized, and forwarding as unauthorized because OAuth failure is allowed: "+path)
			return httpfilter.Continue
		case anyMatches(c.denyRedirect, req):
			f.unauthorized(s, "Unauthorized, and redirecting to OAuth server is not allowed: "+path, "")
			return httpfilter.Stop
		}
		f.redirectToServer(s)
		return httpfilter.Stop
	}
	return f.callback(s, jar, path)
}

// forwardIDToken hands the upstream the session's ID token in
// forward_id_token's header: as a Bearer credential in Authorization, raw
// in any other.
func (f *filter) forwardIDToken(s httpfilter.Stream, id string) {
	switch {
	case f.c.forwardID == "" || id == "":
	case f.c.forwardID == "authorization":
		s.RequestHeaders().Set("authorization", "Bearer "+id)
	default:
		s.RequestHeaders().Set(f.c.forwardID, id)
	}
}

// sessionValid reports whether the cookies carry a session: an HMAC of
// their values with the secret, and an expiry not yet reached.
func (f *filter) sessionValid(jar cookieJar, access, id, refresh string) bool {
	c := f.c
	domain := f.host
	if c.cookieDomain != "" {
		domain = c.cookieDomain
	}
	expires := jar.get(c.cookies.expires)
	if !validHMAC(f.hmacKey, jar.get(c.cookies.hmac), domain, expires, access, id, refresh) {
		return false
	}
	n, err := strconv.ParseUint(expires, 10, 64)
	return err == nil && n <= 1<<62 && int64(n) > c.now().Unix()
}

// decryptCookies reads the request's cookies with the token cookies
// decrypted, and hands the upstream the decrypted ones too. A token that
// does not decrypt (one from before encryption, or sealed with another
// secret) stays as it is: its HMAC then decides.
func (f *filter) decryptCookies(s httpfilter.Stream) cookieJar {
	c := f.c
	jar := cookieJar(parseCookies(cookieHeader(s)))
	for _, n := range []string{c.cookies.bearer, c.cookies.id, c.cookies.refresh} {
		if jar.has(n) {
			if f.wholeCookies == nil {
				f.wholeCookies = map[string]bool{}
			}
			f.wholeCookies[n] = true
		}
	}
	var changed bool
	jar, f.chunks, changed = joinChunks(jar, []string{c.cookies.bearer, c.cookies.id, c.cookies.refresh})
	if c.disableEncryption || len(jar) == 0 {
		if changed {
			setCookieHeader(s, jar)
		}
		return jar
	}
	for i := range jar {
		switch jar[i].name {
		case c.cookies.bearer, c.cookies.id, c.cookies.refresh:
			if jar[i].value == "" {
				continue
			}
			if v, err := decrypt(jar[i].value, f.hmacKey); err == nil && validHeaderValue(v) {
				jar[i].value = v
			}
			changed = true
		}
	}
	if changed {
		setCookieHeader(s, jar)
	}
	return jar
}

// raceRedirect answers a callback that arrives with a valid session (the
// authorization server logged in a user whose other requests already
// finished the flow): back to where the user was going, without an
// exchange.
func (f *filter) raceRedirect(s httpfilter.Stream, jar cookieJar, path string) httpfilter.Status {
	cb := f.validateCallback(jar, path)
	if cb.errMsg != "" {
		f.unauthorized(s, cb.errMsg, cb.flow)
		return httpfilter.Stop
	}
	if u, err := url.Parse(cb.url); err == nil && f.c.redirectMatcher.Match(u.EscapedPath()) {
		f.unauthorized(s, "State url query params matches the redirect path matcher: "+pathAndQuery(u), cb.flow)
		return httpfilter.Stop
	}
	f.replyHeaders = append(f.replyHeaders, [2]string{"location", cb.url})
	f.addFlowCookieDeletion(cb.flow)
	s.SendLocalReply(302, "", 0, detailsRace)
	return httpfilter.Stop
}

// callback handles the authorization server's redirect back: the state
// is checked against the flow's cookies, and the code is exchanged for
// tokens, which become the user's cookies.
func (f *filter) callback(s httpfilter.Stream, jar cookieJar, path string) httpfilter.Status {
	c := f.c
	cb := f.validateCallback(jar, path)
	if cb.errMsg != "" {
		f.unauthorized(s, cb.errMsg, cb.flow)
		return httpfilter.Stop
	}
	redirectURI := f.format(s, c.redirectURI)
	sealed, ok := jar.flowCookieValue(c.cookies.verifier, cb.flow)
	if !ok {
		f.unauthorized(s, "Code verifier cookie is missing in the request", cb.flow)
		return httpfilter.Stop
	}
	verifier, err := decrypt(sealed, f.hmacKey)
	if err != nil {
		f.unauthorized(s, fmt.Sprintf("Failed to decrypt code verifier: %s, error: %v", sealed, err), cb.flow)
		return httpfilter.Stop
	}
	var (
		t    tokens
		fail *tokenFailure
	)
	if !f.call(s, func(ctx context.Context) { t, fail = c.exchangeCode(ctx, cb.code, redirectURI, verifier, f.clientSc) }) {
		return httpfilter.Stop
	}
	if fail != nil {
		if fail.cause != nil {
			c.log.V(1).Info("OAuth2 token request failed", "error", fail.cause.Error())
		}
		f.unauthorized(s, fail.String(), cb.flow)
		return httpfilter.Stop
	}
	f.updateSession(t)
	f.addSessionCookies(jar, func(v string) { f.replyHeaders = append(f.replyHeaders, [2]string{"set-cookie", v}) })
	f.addFlowCookieDeletion(cb.flow)
	f.replyHeaders = append(f.replyHeaders, [2]string{"location", cb.url})
	s.SendLocalReply(302, "", 0, detailsLoggedIn)
	c.stats.success.Inc()
	return httpfilter.Stop
}

// refresh trades the refresh token for new tokens; the request goes on
// with them, and their cookies go on its response. A failed refresh is
// treated as no session.
func (f *filter) refresh(s httpfilter.Stream, refresh string) httpfilter.Status {
	c := f.c
	var (
		t    tokens
		fail *tokenFailure
	)
	if !f.call(s, func(ctx context.Context) { t, fail = c.refreshTokens(ctx, refresh, f.clientSc) }) {
		return httpfilter.Stop
	}
	if fail != nil {
		c.log.V(1).Info("OAuth2 refresh failed", "reason", fail.String(), "error", fmt.Sprint(fail.cause))
		c.stats.refreshFailure.Inc()
		switch {
		case f.allowFailed(s):
			f.continueFailed(s, "Failed to refresh the access token, and forwarding as unauthorized because OAuth failure is allowed")
			return httpfilter.Continue
		case anyMatches(c.denyRedirect, s.Request()):
			f.unauthorized(s, "Failed to refresh the access token, and redirecting to OAuth server is not allowed", "")
			return httpfilter.Stop
		}
		f.redirectToServer(s)
		return httpfilter.Stop
	}
	f.updateSession(t)
	jar := cookieJar(parseCookies(cookieHeader(s)))
	jar = jar.set(c.cookies.expires, f.session.newExpires)
	if f.session.access != "" {
		jar = jar.set(c.cookies.bearer, f.session.access)
	}
	if f.session.id != "" {
		jar = jar.set(c.cookies.id, f.session.id)
	}
	if f.session.refresh != "" {
		jar = jar.set(c.cookies.refresh, f.session.refresh)
	} else if jar.has(c.cookies.refresh) {
		// No new refresh token: the one the user holds stays good.
		f.session.refresh = jar.get(c.cookies.refresh)
	}
	jar = jar.set(c.cookies.hmac, f.sessionHMAC())
	if c.forwardBearer && f.session.access != "" {
		s.RequestHeaders().Set("authorization", "Bearer "+f.session.access)
	}
	if f.session.id != "" {
		f.forwardIDToken(s, f.session.id)
	} else {
		f.forwardIDToken(s, jar.get(c.cookies.id))
	}
	f.refreshed, f.jar = true, slices.Clone(jar)
	c.stats.refreshSuccess.Inc()
	c.stats.success.Inc()
	setCookieHeader(s, c.removeFlowCookies(jar))
	return httpfilter.Continue
}

// call runs a token request in its own goroutine while the stream waits
// for it (bounded by the token endpoint's timeout); false means the
// stream ended first, and the request was cancelled.
func (f *filter) call(s httpfilter.Stream, fn func(ctx context.Context)) bool {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(ctx)
	}()
	return s.Wait(done)
}

// redirectToServer answers with the redirect to the authorization
// endpoint that starts a flow: a flow id, its CSRF token in a cookie and
// in the state, a PKCE code verifier sealed in a cookie and its
// challenge in the request.
func (f *filter) redirectToServer(s httpfilter.Stream) {
	c := f.c
	req := s.Request()
	scheme := "https"
	if strings.EqualFold(req.Scheme, "http") {
		scheme = "http"
	}
	base := scheme + "://" + f.host
	if c.originalRequestURI != nil {
		base = f.format(s, c.originalRequestURI)
	}
	if !hostAllowed(base, c.allowedDomains) {
		f.unauthorized(s, "authority or original_request_uri failed domain allow-list validation: "+base, "")
		return
	}
	redirectURI := f.format(s, c.redirectURI)
	if !hostAllowed(redirectURI, c.allowedDomains) {
		f.unauthorized(s, "redirect_uri failed domain allow-list validation: "+redirectURI, "")
		return
	}
	flow := flowID()
	csrf := csrfToken(f.hmacKey, flow)
	csrfAge := strconv.FormatInt(int64(c.csrfExpiresIn/1e9), 10)
	f.addSetCookie(setCookie(c.cookies.nonce+cookieSuffixDelimiter+flow, csrf, csrfAge, c.cookieDomain, c.nonceCookie))
	// The unsuffixed cookie, for older Envoys serving the callback.
	f.addSetCookie(setCookie(c.cookies.nonce, csrf, csrfAge, c.cookieDomain, c.nonceCookie))
	verifier := codeVerifier()
	sealed := encrypt(verifier, f.hmacKey)
	verifierAge := strconv.FormatInt(int64(c.verifierExpiresIn/1e9), 10)
	f.addSetCookie(setCookie(c.cookies.verifier+cookieSuffixDelimiter+flow, sealed, verifierAge, c.cookieDomain, c.verifierCookie))
	f.addSetCookie(setCookie(c.cookies.verifier, sealed, verifierAge, c.cookieDomain, c.verifierCookie))
	loc := c.authorizationLocation(map[string]string{
		"state":                 encodeState(flowState{URL: base + req.Path, CSRFToken: csrf, FlowID: flow}),
		"redirect_uri":          urlEncode(redirectURI),
		"code_challenge":        codeChallenge(verifier),
		"code_challenge_method": "S256",
	})
	f.replyHeaders = append(f.replyHeaders, [2]string{"location", loc})
	s.SendLocalReply(302, "", 0, detailsMissingCredentials)
	c.stats.unauthorized.Inc()
}

// signOut clears the user's cookies and sends the user to the end
// session endpoint, or to the site's root.
func (f *filter) signOut(s httpfilter.Stream, jar cookieJar) httpfilter.Status {
	c := f.c
	type del struct{ name, path string }
	dels := []del{
		{c.cookies.hmac, c.hmacCookie.path},
		{c.cookies.bearer, c.bearerCookie.path},
		{c.cookies.id, c.idCookie.path},
		{c.cookies.refresh, c.refreshCookie.path},
		{c.cookies.expires, c.expiresCookie.path},
	}
	for _, ck := range jar {
		switch {
		case matchesBase(ck.name, c.cookies.nonce):
			dels = append(dels, del{ck.name, c.nonceCookie.path})
		case matchesBase(ck.name, c.cookies.verifier):
			dels = append(dels, del{ck.name, c.verifierCookie.path})
		}
	}
	for _, tk := range []struct {
		name, path string
	}{{c.cookies.bearer, c.bearerCookie.path}, {c.cookies.id, c.idCookie.path}, {c.cookies.refresh, c.refreshCookie.path}} {
		for _, n := range f.chunks[tk.name] {
			dels = append(dels, del{n, tk.path})
		}
	}
	for _, d := range dels {
		f.addSetCookie(deleteCookie(d.name, d.path, c.cookieDomain))
	}
	req := s.Request()
	home := req.Scheme + "://" + f.host + "/"
	loc := home
	if c.endSessionEndpoint != "" {
		loc = c.endSessionEndpoint + "?id_token_hint=" + jar.get(c.cookies.id) + "&client_id=" + c.clientID
		if !c.postLogoutDisabled {
			uri := home
			if c.postLogoutFormatter != nil {
				uri = f.format(s, c.postLogoutFormatter)
			}
			loc += "&post_logout_redirect_uri=" + urlEncode(uri)
		}
	}
	f.replyHeaders = append(f.replyHeaders, [2]string{"location", loc})
	s.SendLocalReply(302, "", 0, detailsSignOut)
	return httpfilter.Stop
}

// unauthorized answers 401 with Envoy's body, deleting the flow's cookies
// when the flow is known.
func (f *filter) unauthorized(s httpfilter.Stream, why, flow string) {
	f.c.stats.failure.Inc()
	f.replyHeaders = f.replyHeaders[:0]
	if flow != "" {
		f.addFlowCookieDeletion(flow)
	}
	s.SendLocalReply(401, unauthorizedBody, 0, details(why))
}

// allowFailed reports whether allow_failed_matcher lets a request without
// a session through; never the callback, which Envoy itself serves.
func (f *filter) allowFailed(s httpfilter.Stream) bool {
	req := s.Request()
	return !f.c.redirectMatcher.Match(pathOnly(req.Path)) && anyMatches(f.c.allowFailed, req)
}

// continueFailed lets a request without a session through as
// unauthenticated: its OAuth cookies removed, the failure told in
// headers.
func (f *filter) continueFailed(s httpfilter.Stream, reason string) {
	c := f.c
	jar := cookieJar(parseCookies(cookieHeader(s)))
	jar = jar.remove(func(n string) bool {
		return n == c.cookies.bearer || n == c.cookies.id || n == c.cookies.hmac || n == c.cookies.expires || n == c.cookies.refresh
	})
	setCookieHeader(s, c.removeFlowCookies(jar))
	h := s.RequestHeaders()
	h.Set(headerOAuthStatus, "failed")
	h.Set(headerOAuthFailureReason, reason)
	c.stats.allowFailedPassthrough.Inc()
}

// EncodeHeaders implements httpfilter.Encoder: the local reply's
// Location and cookies, or the refreshed session's cookies on the
// upstream's response.
func (f *filter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	h := s.ResponseHeaders()
	for _, kv := range f.replyHeaders {
		if kv[0] == "location" {
			h.Set(kv[0], kv[1])
		} else {
			h.Add(kv[0], kv[1])
		}
	}
	if f.refreshed {
		f.refreshed = false
		f.addSessionCookies(f.jar, func(v string) { h.Add("set-cookie", v) })
	}
	return httpfilter.Continue
}

// addSetCookie queues a Set-Cookie header of the reply.
func (f *filter) addSetCookie(v string) {
	f.replyHeaders = append(f.replyHeaders, [2]string{"set-cookie", v})
}

// addFlowCookieDeletion queues the deletion of a flow's nonce and code
// verifier cookies, suffixed and not.
func (f *filter) addFlowCookieDeletion(flow string) {
	c := f.c
	for _, base := range []struct {
		name, path string
	}{{c.cookies.nonce, c.nonceCookie.path}, {c.cookies.verifier, c.verifierCookie.path}} {
		if flow != "" {
			f.addSetCookie(deleteCookie(base.name+cookieSuffixDelimiter+flow, base.path, c.cookieDomain))
		}
		f.addSetCookie(deleteCookie(base.name, base.path, c.cookieDomain))
	}
}

// format renders a formatter of request header operators for the stream.
func (f *filter) format(s httpfilter.Stream, fm *accesslog.Formatter) string {
	req := s.Request()
	info := s.Info()
	e := &accesslog.Entry{
		Method: req.Method, Path: req.Path, Authority: req.Host, Scheme: req.Scheme,
		Protocol:                info.Protocol,
		RequestHeaders:          s.RequestHeaders(),
		DownstreamRemoteAddress: info.RemoteAddress,
		DownstreamLocalAddress:  info.LocalAddress,
		StartTime:               info.Start,
	}
	return string(fm.AppendValue(nil, e))
}

// cookieHeader is the request's cookies, the values of several Cookie
// fields joined as one.
func cookieHeader(s httpfilter.Stream) string {
	var parts []string
	s.RangeRequestHeaders(func(name, value string) bool {
		if name == "cookie" {
			parts = append(parts, value)
		}
		return true
	})
	return strings.Join(parts, "; ")
}

// setCookieHeader replaces the request's Cookie header with the jar.
func setCookieHeader(s httpfilter.Stream, jar cookieJar) {
	h := s.RequestHeaders()
	if len(jar) == 0 {
		h.Del("cookie")
		return
	}
	h.Set("cookie", jar.String())
}

// removeFlowCookies drops what the upstream has no use for: the HMAC,
// expiry and refresh token cookies and the flows' cookies. The access
// and ID tokens stay: they are the user's credentials.
func (c *config) removeFlowCookies(jar cookieJar) cookieJar {
	return jar.remove(func(n string) bool {
		return n == c.cookies.hmac || n == c.cookies.expires || n == c.cookies.refresh ||
			matchesBase(n, c.cookies.nonce) || matchesBase(n, c.cookies.verifier)
	})
}

// details is a %RESPONSE_CODE_DETAILS% value: Envoy replaces its blanks
// with underscores.
func details(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\t', '\f', '\v', '\n', '\r':
			return '_'
		}
		return r
	}, s)
}

// validHeaderValue reports whether a decrypted value may go back in a
// header (a value that decrypted by chance with a wrong secret may not).
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; b == 0 || b == '\r' || b == '\n' || (b < ' ' && b != '\t') || b == 0x7f {
			return false
		}
	}
	return true
}

// pathOnly is the path without its query string and fragment, what
// Envoy's path matchers see.
func pathOnly(p string) string {
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		return p[:i]
	}
	return p
}

// pathAndQuery is a URL's path and query as Envoy prints them.
func pathAndQuery(u *url.URL) string {
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	if u.RawQuery != "" {
		p += "?" + u.RawQuery
	}
	return p
}
