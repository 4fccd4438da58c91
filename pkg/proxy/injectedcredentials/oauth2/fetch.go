package oauth2

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	oauth2v3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/injected_credentials/oauth2/v3"
)

// maxTokenResponse bounds what is read of the token endpoint's answer.
const maxTokenResponse = 1 << 20

// tokenResponse is the token endpoint's JSON answer (RFC 6749 section
// 5.1); expires_in may come as a number or a string, as proto JSON reads
// it, and both fields are required, as in Envoy.
type tokenResponse struct {
	AccessToken *string     `json:"access_token"`
	ExpiresIn   json.Number `json:"expires_in"`
}

// fetch asks the token endpoint for a token once. It returns when to ask
// again, and false when Envoy would not (a bad token).
func (in *injector) fetch(ctx context.Context) (time.Duration, bool) {
	var secret string
	if in.authType != oauth2v3.OAuth2_TLS_CLIENT_AUTH {
		secret = string(in.secret.Bytes())
		if secret == "" {
			in.stats.noSecret.Inc()
			return in.retry, true
		}
	}
	if in.svc.Cluster(in.cluster) == nil {
		in.stats.noCluster.Inc()
		return in.retry, true
	}
	in.stats.requested.Inc()
	ctx, cancel := context.WithTimeout(ctx, in.timeout)
	defer cancel()
	body := in.body(secret)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://token-endpoint/", strings.NewReader(body))
	if err != nil {
		in.stats.badResponseCode.Inc()
		return in.retry, true
	}
	// The path as configured, not re-encoded.
	req.URL.Opaque, _, _ = strings.Cut(in.path, "?")
	req.URL.RawQuery = ""
	if _, q, ok := strings.Cut(in.path, "?"); ok {
		req.URL.RawQuery = q
	}
	req.Host = in.host
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	// Go's client would add its own; Envoy's async client adds none.
	req.Header["User-Agent"] = []string{""}
	if in.authType == oauth2v3.OAuth2_BASIC_AUTH {
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(in.clientID+":"+secret)))
	}
	resp, err := in.transport.RoundTrip(req)
	if err != nil {
		// No answer (a refused connection, the timeout): Envoy's async
		// client gets the router's 503 or 504 local reply then.
		in.stats.badResponseCode.Inc()
		return in.retry, true
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenResponse))
	resp.Body.Close()
	if err != nil {
		in.stats.streamReset.Inc()
		return in.retry, true
	}
	if resp.StatusCode != http.StatusOK {
		in.stats.badResponseCode.Inc()
		return in.retry, true
	}
	var tr tokenResponse
	if json.Unmarshal(raw, &tr) != nil || tr.AccessToken == nil || tr.ExpiresIn == "" {
		in.stats.badToken.Inc()
		return 0, false
	}
	secs, err := strconv.ParseUint(string(tr.ExpiresIn), 10, 63)
	if err != nil {
		in.stats.badToken.Inc()
		return 0, false
	}
	tok := "Bearer " + *tr.AccessToken
	in.token.Store(&tok)
	in.stats.fetched.Inc()
	// Envoy refreshes at half the lifetime; a lifetime under two seconds
	// would have it ask without pause, so the refresh waits a second at
	// least.
	return max(time.Duration(secs)*time.Second/2, time.Second), true
}

// body is the token request's form: the client credentials grant, the
// client's id (and secret, for URL_ENCODED_BODY) unless BASIC_AUTH sends
// them in the Authorization header, then the scopes and endpoint_params.
func (in *injector) body(secret string) string {
	b := "grant_type=client_credentials"
	switch in.authType {
	case oauth2v3.OAuth2_URL_ENCODED_BODY:
		b += "&client_id=" + percentEncode(in.clientID) + "&client_secret=" + percentEncode(secret)
	case oauth2v3.OAuth2_TLS_CLIENT_AUTH:
		b += "&client_id=" + percentEncode(in.clientID)
	}
	return b + in.form
}
