package oauth2

import (
	"errors"
	"fmt"
	"sync/atomic"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/datasource"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
)

// secretResolver is what the server offers filters that read secrets:
// the secret an SdsSecretConfig names (static, from a file or from a
// discovery stream), with its updates.
type secretResolver interface {
	Secret(sc *tlsv3.SdsSecretConfig) (*tlsconfig.Provider, error)
}

// secretValue is a generic secret as the filter reads it: the current
// value of its provider, whose DataSource is read again only when the
// secret changes (an SDS update).
type secretValue struct {
	p     *tlsconfig.Provider
	cache atomic.Pointer[secretRead]
}

// secretRead is one read of a secret's value.
type secretRead struct {
	src *tlsv3.Secret
	val []byte
}

// value is the secret's bytes; empty while the secret has not arrived
// (or is not a generic secret).
func (v *secretValue) value() []byte {
	sec := v.p.Secret()
	if sec == nil {
		return nil
	}
	if r := v.cache.Load(); r != nil && r.src == sec {
		return r.val
	}
	b, _ := datasource.Read(sec.GetGenericSecret().GetSecret())
	v.cache.Store(&secretRead{src: sec, val: b})
	return b
}

// resolveSecret finds the generic secret sc names. A secret already known
// must be a generic secret whose value can be read. Errors name the
// field below sc, with Envoy's words first.
func resolveSecret(ctx httpfilter.Context, sc *tlsv3.SdsSecretConfig, what string) (*secretValue, error) {
	r, ok := ctx.Services.(secretResolver)
	if !ok || ctx.Services == nil {
		return nil, fmt.Errorf(": invalid %s secret configuration (secrets are not available here)", what)
	}
	p, err := r.Secret(sc)
	if err != nil {
		return nil, fmt.Errorf(".%w (invalid %s secret configuration)", err, what)
	}
	if sec := p.Secret(); sec != nil {
		gs := sec.GetGenericSecret()
		if gs == nil {
			return nil, fmt.Errorf(".name: invalid %s secret configuration (secret %q is not a generic_secret)", what, sc.GetName())
		}
		if len(gs.GetSecrets()) > 0 {
			return nil, errors.New(".name: the secrets map of a generic secret is not supported by Outrigger (read only for PRIVATE_KEY_JWT)")
		}
		if _, err := datasource.Read(gs.GetSecret()); err != nil {
			return nil, fmt.Errorf(".name: secret %q: generic_secret.secret.%w", sc.GetName(), err)
		}
	}
	return &secretValue{p: p}, nil
}
