// Package genericsecret reads the generic secrets (Envoy's
// generic_secret) that HTTP filters and their extensions name with an
// SdsSecretConfig: a static secret, one from a file or one a discovery
// stream brings, with its updates. The oauth2 filter reads its client and
// HMAC secrets through it, the credential injector its credentials.
package genericsecret

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/datasource"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
)

// Resolver is what the server offers filters that read secrets: the
// secret an SdsSecretConfig names, with its updates. A filter's
// httpfilter.Services implements it.
type Resolver interface {
	Secret(sc *tlsv3.SdsSecretConfig) (*tlsconfig.Provider, error)
}

// Value is a generic secret as a filter reads it: the current value of
// its provider, whose DataSource is read again only when the secret
// changes (an SDS update).
type Value struct {
	p     *tlsconfig.Provider
	cache atomic.Pointer[read]
}

// read is one read of a secret's value.
type read struct {
	src *tlsv3.Secret
	val []byte
}

// Bytes is the secret's value; empty while the secret has not arrived
// (or is not a generic secret).
func (v *Value) Bytes() []byte {
	sec := v.p.Secret()
	if sec == nil {
		return nil
	}
	if r := v.cache.Load(); r != nil && r.src == sec {
		return r.val
	}
	b, _ := datasource.Read(sec.GetGenericSecret().GetSecret())
	v.cache.Store(&read{src: sec, val: b})
	return b
}

// Entry is the value of the named entry of a multi-entry secret (its
// secrets map); nil when the secret has not arrived, has no such entry or
// it cannot be read.
func (v *Value) Entry(name string) []byte {
	sec := v.p.Secret()
	if sec == nil {
		return nil
	}
	ds, ok := sec.GetGenericSecret().GetSecrets()[name]
	if !ok {
		return nil
	}
	b, _ := datasource.Read(ds)
	return b
}

// MultiEntry reports whether the secret's current value is a multi-entry
// one (a secrets map).
func (v *Value) MultiEntry() bool {
	sec := v.p.Secret()
	return sec != nil && len(sec.GetGenericSecret().GetSecrets()) > 0
}

// Resolve finds the generic secret sc names through services (nil, or
// not a Resolver, when the server offers no secrets). A secret already
// known must be a generic secret whose value can be read; a multi-entry
// one (its secrets map) is refused, only ResolveEntries reads those.
// Errors name the field below sc (they start with "." or ":"), with
// Envoy's words first; what says which secret it is ("token", "HMAC").
func Resolve(services any, sc *tlsv3.SdsSecretConfig, what string) (*Value, error) {
	return resolve(services, sc, what, nil)
}

// ResolveEntries is Resolve for a secret that may also be a multi-entry
// one: its secrets map, whose entries must be among names, each readable.
func ResolveEntries(services any, sc *tlsv3.SdsSecretConfig, what string, names ...string) (*Value, error) {
	if names == nil {
		names = []string{}
	}
	return resolve(services, sc, what, names)
}

func resolve(services any, sc *tlsv3.SdsSecretConfig, what string, entries []string) (*Value, error) {
	r, ok := services.(Resolver)
	if !ok || services == nil {
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
			if entries == nil {
				return nil, errors.New(".name: the secrets map of a generic secret is not supported here (Envoy reads it only for the oauth2 filter's PRIVATE_KEY_JWT)")
			}
			for k, ds := range gs.GetSecrets() {
				if !slices.Contains(entries, k) {
					return nil, fmt.Errorf(".name: secret %q: generic_secret.secrets: unknown entry %q (the entries read are %s)", sc.GetName(), k, strings.Join(entries, ", "))
				}
				if _, err := datasource.Read(ds); err != nil {
					return nil, fmt.Errorf(".name: secret %q: generic_secret.secrets[%s].%w", sc.GetName(), k, err)
				}
			}
		} else if _, err := datasource.Read(gs.GetSecret()); err != nil {
			return nil, fmt.Errorf(".name: secret %q: generic_secret.secret.%w", sc.GetName(), err)
		}
	}
	return &Value{p: p}, nil
}
