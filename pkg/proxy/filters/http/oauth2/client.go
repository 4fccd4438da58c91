package oauth2

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxTokenResponse bounds what is read of the token endpoint's answer.
const maxTokenResponse = 1 << 20

// formReserved are the characters Envoy encodes in the values of its
// token requests.
const formReserved = ":/=&?+"

// tokens are what a token exchange yields.
type tokens struct {
	access, id, refresh string
	expiresIn           time.Duration
}

// tokenFailure says why an exchange failed, in Envoy's words (reason),
// with what the endpoint answered (details); cause is the transport's
// error, which Envoy's details do not carry (it goes to the debug log).
type tokenFailure struct {
	reason, details string
	cause           error
}

// String is the failure as the reply's details say it.
func (f *tokenFailure) String() string {
	if f.details == "" {
		return f.reason
	}
	return f.reason + ": " + f.details
}

// tokenResponse is the token endpoint's JSON answer (RFC 6749 section
// 5.1); expires_in may come as a number or a string, as proto JSON reads
// it.
type tokenResponse struct {
	AccessToken  *string     `json:"access_token"`
	IDToken      string      `json:"id_token"`
	RefreshToken string      `json:"refresh_token"`
	ExpiresIn    json.Number `json:"expires_in"`
}

// exchangeCode asks the token endpoint for tokens for an authorization
// code (with the PKCE code verifier).
func (c *config) exchangeCode(ctx context.Context, code, redirectURI, verifier string, clientSecret []byte) (tokens, *tokenFailure) {
	cb := formEncode(redirectURI, formReserved)
	id, secret := formEncode(c.clientID, formReserved), formEncode(string(clientSecret), formReserved)
	var body string
	switch c.authType {
	case authBasic:
		body = "grant_type=authorization_code&code=" + code + "&redirect_uri=" + cb + "&code_verifier=" + verifier
	case authTLSClient:
		body = "grant_type=authorization_code&code=" + code + "&client_id=" + id + "&redirect_uri=" + cb + "&code_verifier=" + verifier
	case authPrivateKeyJWT:
		a, fail := c.clientAssertion("Failed to get access token")
		if fail != nil {
			return tokens{}, fail
		}
		body = "grant_type=authorization_code&code=" + code + "&client_id=" + id + a + "&redirect_uri=" + cb + "&code_verifier=" + verifier
	default:
		body = "grant_type=authorization_code&code=" + code + "&client_id=" + id + "&client_secret=" + secret + "&redirect_uri=" + cb + "&code_verifier=" + verifier
	}
	return c.requestTokens(ctx, body, clientSecret, "Failed to get access token")
}

// refreshTokens asks the token endpoint for new tokens with a refresh
// token.
func (c *config) refreshTokens(ctx context.Context, refresh string, clientSecret []byte) (tokens, *tokenFailure) {
	id, secret := formEncode(c.clientID, formReserved), formEncode(string(clientSecret), formReserved)
	var body string
	switch c.authType {
	case authBasic:
		// Envoy encodes the refresh token with its default set here.
		body = "grant_type=refresh_token&refresh_token=" + formEncode(refresh, "%")
	case authTLSClient:
		body = "grant_type=refresh_token&refresh_token=" + formEncode(refresh, formReserved) + "&client_id=" + id
	case authPrivateKeyJWT:
		a, fail := c.clientAssertion("Failed to refresh the access token")
		if fail != nil {
			return tokens{}, fail
		}
		body = "grant_type=refresh_token&refresh_token=" + formEncode(refresh, formReserved) + "&client_id=" + id + a
	default:
		body = "grant_type=refresh_token&refresh_token=" + formEncode(refresh, formReserved) + "&client_id=" + id + "&client_secret=" + secret
	}
	return c.requestTokens(ctx, body, clientSecret, "Failed to refresh the access token")
}

// clientAssertion is the PRIVATE_KEY_JWT parameters of a token request
// ("&client_assertion_type=...&client_assertion=..."), with a new
// assertion; a key that cannot sign fails the exchange.
func (c *config) clientAssertion(failed string) (string, *tokenFailure) {
	pemBytes, kid := c.signingKey()
	a, err := c.jwt.assertion(c.clientID, pemBytes, kid, c.now())
	if err != nil {
		return "", &tokenFailure{reason: failed, details: "client assertion: " + err.Error(), cause: err}
	}
	return "&client_assertion_type=" + formEncode(clientAssertionType, formReserved) + "&client_assertion=" + a, nil
}

// requestTokens posts a token request to the token endpoint's cluster,
// bounded by its timeout, and reads the answer.
func (c *config) requestTokens(ctx context.Context, body string, clientSecret []byte, failed string) (tokens, *tokenFailure) {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	if c.svc.Cluster(c.cluster) == nil {
		return tokens{}, &tokenFailure{reason: "Token endpoint cluster not found"}
	}
	res := retriedToken(ctx, c.retry, func(ctx context.Context) tryResult { return c.tryTokenRequest(ctx, body, clientSecret) })
	status, raw := res.status, res.body
	if res.err != nil {
		// Envoy's async client gets the router's local reply then, and
		// the filter reads it as the endpoint's answer.
		var body string
		status, body = noResponse(res.ctx, res.err)
		return tokens{}, &tokenFailure{reason: failed, details: fmt.Sprintf("response code: %d, response body: %s", status, body), cause: res.err}
	}
	if status != http.StatusOK {
		return tokens{}, &tokenFailure{reason: failed, details: fmt.Sprintf("response code: %d, response body: %s", status, raw)}
	}
	var tr tokenResponse
	if err := json.Unmarshal(raw, &tr); err != nil {
		return tokens{}, &tokenFailure{reason: "Failed to parse oauth response body", details: fmt.Sprintf("response body: %s, exception: %v", raw, err)}
	}
	if tr.AccessToken == nil {
		return tokens{}, &tokenFailure{reason: "No access token found in the token exchange response", details: "response body: " + string(raw)}
	}
	t := tokens{access: *tr.AccessToken, id: tr.IDToken, refresh: tr.RefreshToken, expiresIn: c.defaultExpiresIn}
	if tr.ExpiresIn != "" {
		n, err := strconv.ParseInt(string(tr.ExpiresIn), 10, 64)
		if err != nil {
			return tokens{}, &tokenFailure{reason: "Failed to parse oauth response body", details: "response body: " + string(raw) + ", exception: expires_in: " + err.Error()}
		}
		t.expiresIn = time.Duration(n) * time.Second
	}
	if t.expiresIn <= 0 {
		return tokens{}, &tokenFailure{reason: "No default or explicit access token expiration found in the token exchange response", details: "response body: " + string(raw)}
	}
	return t, nil
}

// tryTokenRequest is one try of a token request: a request of its own
// (a retry sends the body again), its answer read whole.
func (c *config) tryTokenRequest(ctx context.Context, body string, clientSecret []byte) tryResult {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://oauth2-token"+c.tokenPath, strings.NewReader(body))
	if err != nil {
		return tryResult{err: err}
	}
	// The path as configured, not re-encoded.
	req.URL.Opaque, _, _ = strings.Cut(c.tokenPath, "?")
	req.Host = c.tokenHost
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	// Go's client would add its own; Envoy adds none.
	req.Header["User-Agent"] = []string{""}
	if c.authType == authBasic {
		cred := base64.StdEncoding.EncodeToString([]byte(c.clientID + ":" + string(clientSecret)))
		req.Header.Set("Authorization", "Basic "+cred)
	}
	resp, err := c.transport.RoundTrip(req)
	if err != nil {
		return tryResult{err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenResponse))
	if err != nil {
		return tryResult{err: err}
	}
	return tryResult{status: resp.StatusCode, body: raw}
}

// noResponse is the status and body of the local reply Envoy's router
// gives a request that got no response: 504 when the timeout struck, 503
// when the connection failed or was lost.
func noResponse(ctx context.Context, err error) (int, string) {
	const prefix = "upstream connect error or disconnect/reset before headers. reset reason: "
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return http.StatusGatewayTimeout, "upstream request timeout"
	}
	if op := (*net.OpError)(nil); errors.As(err, &op) && op.Op == "dial" {
		return http.StatusServiceUnavailable, prefix + "remote connection failure"
	}
	return http.StatusServiceUnavailable, prefix + "connection termination"
}
