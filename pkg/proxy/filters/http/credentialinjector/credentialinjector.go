// Package credentialinjector is the credential injector HTTP filter
// (envoy.filters.http.credential_injector): it puts the credential of its
// extension (a generic secret, an OAuth2 client credentials token) in a
// request header, keeping one the request already has unless overwrite
// is set. A request it has no credential for gets Envoy's 401, unless
// allow_request_without_credential lets it through.
// Stats: http.<stat_prefix>.credential_injector.injected, failed and
// already_exists. It runs in upstream filter chains too.
package credentialinjector

import (
	"errors"
	"fmt"
	"io"

	credentialinjectorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/credential_injector/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/injectedcredentials"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.credential_injector"

// Factory builds the filter.
type Factory struct{}

var _ httpfilter.UpstreamCapable = Factory{}

// UpstreamCapable implements httpfilter.UpstreamCapable: as in Envoy, the
// filter may run in the router's upstream_http_filters, where each attempt
// gets the credential (a cluster's http_filters reach no stats nor
// secrets: it is refused there).
func (Factory) UpstreamCapable() {}

// Compile implements httpfilter.Factory.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	c, ok := config.(*credentialinjectorv3.CredentialInjector)
	if !ok {
		return nil, errors.New("not a CredentialInjector configuration")
	}
	if ctx.Stats == nil {
		// A cluster's upstream chain: refused there, with its reason.
		return nil, httpfilter.ErrNoStats
	}
	if ctx.Extensions == nil {
		return nil, errors.New("credential: no extension registry")
	}
	tec := c.GetCredential()
	if tec == nil {
		return nil, errors.New("credential: required")
	}
	ext, msg, err := ctx.Extensions.Resolve(extension.Ref{
		Kind: "injected credential", Category: injectedcredentials.Category, Name: tec.GetName(), Config: tec.GetTypedConfig(),
	}, ctx.LookupByName)
	if err != nil {
		return nil, fmt.Errorf("credential.%w", err)
	}
	f, ok := ext.Factory.(injectedcredentials.Factory)
	if !ok {
		return nil, fmt.Errorf("credential.typed_config: extension %q is not an injected credential", ext.Name)
	}
	prefix := ctx.StatPrefix + "credential_injector."
	ictx := ctx
	ictx.StatPrefix = prefix
	inj, err := f.CompileInjector(msg, ictx)
	if err != nil {
		return nil, httpfilter.PrefixErrors("credential.typed_config.", err)
	}
	sc := ctx.Stats.Scope(prefix)
	return &filterConfig{
		injector:      inj,
		overwrite:     c.GetOverwrite(),
		allowMissing:  c.GetAllowRequestWithoutCredential(),
		injected:      sc.Counter("injected"),
		failed:        sc.Counter("failed"),
		alreadyExists: sc.Counter("already_exists"),
	}, nil
}

// filterConfig is the compiled filter; it keeps nothing per request and
// is its own filter.
type filterConfig struct {
	injector                        injectedcredentials.Injector
	overwrite, allowMissing         bool
	injected, failed, alreadyExists *stats.Counter
}

var (
	_ httpfilter.Decoder = (*filterConfig)(nil)
	_ io.Closer          = (*filterConfig)(nil)
)

// NewFilter implements httpfilter.Config.
func (c *filterConfig) NewFilter() httpfilter.Filter { return c }

// Close implements io.Closer: it stops what the credential runs (the
// OAuth2 token fetches).
func (c *filterConfig) Close() error {
	if cl, ok := c.injector.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}

// DecodeHeaders implements httpfilter.Decoder: Envoy's injectCredential.
func (c *filterConfig) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	h := s.RequestHeaders()
	header := c.injector.Header()
	if !c.overwrite {
		if _, present := h.Get(header); present {
			c.alreadyExists.Inc()
			return httpfilter.Continue
		}
	}
	cred := c.injector.Credential()
	if cred == "" {
		c.failed.Inc()
		if c.allowMissing {
			return httpfilter.Continue
		}
		s.SendLocalReply(401, "Failed to inject credential.", 0, "failed_to_inject_credential")
		return httpfilter.Stop
	}
	h.Set(header, cred)
	c.injected.Inc()
	return httpfilter.Continue
}
