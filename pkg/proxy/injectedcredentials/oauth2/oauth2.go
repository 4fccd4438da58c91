// Package oauth2 is the OAuth2 injected credential
// (envoy.http.injected_credentials.oauth2): a token fetched from the
// authorization server's token endpoint with the client credentials grant
// (RFC 6749 section 4.4), in the background from the moment the
// configuration loads, refreshed at half its lifetime, and injected as
// "Authorization: Bearer <token>". Until the first token arrives there is
// no credential. Stats: http.<stat_prefix>.credential_injector.oauth2.*,
// Envoy's token_requested, token_fetched and token_fetch_failed_on_*.
package oauth2

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	oauth2v3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/injected_credentials/oauth2/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/genericsecret"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/injectedcredentials"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Name is the extension's name in the proxy. spelling.
const Name = "proxy.http.injected_credentials.oauth2"

// defaultRetry is Envoy's token_fetch_retry_interval default.
const defaultRetry = 2 * time.Second

// reserved are the characters Envoy percent-encodes in the values of the
// token request.
const reserved = ":/=&?"

// Factory compiles an OAuth2 credential.
type Factory struct{}

var _ injectedcredentials.Factory = Factory{}

// CompileInjector implements injectedcredentials.Factory: it checks the
// configuration and starts fetching tokens.
func (Factory) CompileInjector(config proto.Message, ctx httpfilter.Context) (injectedcredentials.Injector, error) {
	c, ok := config.(*oauth2v3.OAuth2)
	if !ok {
		return nil, errors.New("not an OAuth2 configuration")
	}
	te := c.GetTokenEndpoint()
	if te == nil {
		return nil, errors.New("token_endpoint: required")
	}
	if te.GetCluster() == "" {
		return nil, errors.New("token_endpoint.cluster: required")
	}
	if ctx.Services == nil {
		return nil, errors.New("token_endpoint.cluster: no cluster can be reached")
	}
	cc := c.GetClientCredentials()
	if cc == nil {
		return nil, errors.New("client_credentials: required (the only flow)")
	}
	if ctx.Stats == nil {
		return nil, errors.New("no stat store")
	}
	in := &injector{
		clientID: cc.GetClientId(),
		authType: cc.GetAuthType(),
		cluster:  te.GetCluster(),
		svc:      ctx.Services,
		timeout:  te.GetTimeout().AsDuration(),
		retry:    defaultRetry,
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	if in.timeout <= 0 {
		return nil, errors.New("token_endpoint.timeout: required (must be positive)")
	}
	// Envoy reads whole seconds of the interval (at least 1s, which the
	// field's constraint checks).
	if r := c.GetTokenFetchRetryInterval(); r != nil && r.GetSeconds() > 0 {
		in.retry = time.Duration(r.GetSeconds()) * time.Second
	}
	switch cc.GetAuthType() {
	case oauth2v3.OAuth2_BASIC_AUTH, oauth2v3.OAuth2_URL_ENCODED_BODY:
		if cc.GetClientSecret() == nil {
			return nil, errors.New("client_credentials.client_secret: required unless auth_type is TLS_CLIENT_AUTH")
		}
		v, err := genericsecret.Resolve(ctx.Services, cc.GetClientSecret(), "client")
		if err != nil {
			return nil, fmt.Errorf("client_credentials.client_secret%w", err)
		}
		in.secret = v
	case oauth2v3.OAuth2_TLS_CLIENT_AUTH:
		// The cluster's TLS client certificate authenticates the client.
	default:
		return nil, fmt.Errorf("client_credentials.auth_type: unknown value %d", cc.GetAuthType())
	}
	in.host, in.path = httpfilter.HostPath(te.GetUri())
	in.form = formTail(c)
	in.transport = httpfilter.ClusterTransport(ctx.Services, te.GetCluster(), 1)
	sc := ctx.Stats.Scope(ctx.StatPrefix + "oauth2.")
	in.stats = tokenStats{
		requested:       sc.Counter("token_requested"),
		fetched:         sc.Counter("token_fetched"),
		noSecret:        sc.Counter("token_fetch_failed_on_client_secret"),
		noCluster:       sc.Counter("token_fetch_failed_on_cluster_not_found"),
		streamReset:     sc.Counter("token_fetch_failed_on_stream_reset"),
		badToken:        sc.Counter("token_fetch_failed_on_bad_token"),
		badResponseCode: sc.Counter("token_fetch_failed_on_bad_response_code"),
	}
	go in.run()
	return in, nil
}

// formTail is what the token request's body carries after its grant type
// and client credentials: the scopes, space-separated, and the
// endpoint_params, each value percent-encoded as Envoy encodes them.
func formTail(c *oauth2v3.OAuth2) string {
	var b strings.Builder
	if len(c.GetScopes()) > 0 {
		b.WriteString("&scope=")
		b.WriteString(percentEncode(strings.Join(c.GetScopes(), " ")))
	}
	for _, p := range c.GetEndpointParams() {
		b.WriteByte('&')
		b.WriteString(percentEncode(p.GetName()))
		b.WriteByte('=')
		b.WriteString(percentEncode(p.GetValue()))
	}
	return b.String()
}

// percentEncode encodes a value of the token request's form.
func percentEncode(s string) string { return httpfilter.PercentEncode(s, reserved) }

// tokenStats are Envoy's token provider stats.
type tokenStats struct {
	requested, fetched, noSecret, noCluster, streamReset, badToken, badResponseCode *stats.Counter
}

// injector fetches tokens and hands out the current one.
type injector struct {
	clientID   string
	authType   oauth2v3.OAuth2_AuthType
	secret     *genericsecret.Value
	cluster    string
	svc        httpfilter.Services
	host, path string
	form       string
	timeout    time.Duration
	retry      time.Duration
	transport  *http.Transport
	stats      tokenStats

	// token is "Bearer <access token>", "" until the first one.
	token atomic.Pointer[string]

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// Header implements injectedcredentials.Injector.
func (*injector) Header() string { return "authorization" }

// Credential implements injectedcredentials.Injector.
func (in *injector) Credential() string {
	if t := in.token.Load(); t != nil {
		return *t
	}
	return ""
}

// Close implements io.Closer: the fetches stop, the one under way is cut
// short, and the idle connection to the token endpoint goes.
func (in *injector) Close() error {
	in.closeOnce.Do(func() {
		close(in.stop)
		<-in.done
		in.transport.CloseIdleConnections()
	})
	return nil
}

// run fetches a token, then again when it has lived half its lifetime or,
// after a failure Envoy retries, after the retry interval; a bad token
// stops the fetches, as in Envoy (until the configuration is replaced).
func (in *injector) run() {
	defer close(in.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-in.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		wait, again := in.fetch(ctx)
		if !again {
			<-in.stop
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-in.stop:
			t.Stop()
			return
		case <-t.C:
		}
	}
}
