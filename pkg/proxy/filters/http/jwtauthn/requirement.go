package jwtauthn

import (
	"errors"
	"fmt"
	"sort"

	jwtv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/jwt_authn/v3"
)

// verifier is a compiled JwtRequirement.
type verifier interface {
	verify(r *request) status
}

// providerVerifier is provider_name or provider_and_audiences: the
// provider's tokens must all verify (audiences replaced when set).
type providerVerifier struct {
	p         *provider
	audiences map[string]bool
}

func (v *providerVerifier) verify(r *request) status {
	aud := v.p.audiences
	if v.audiences != nil {
		aud = v.audiences
	}
	if v.p.forwardPayloadHeader != "" {
		r.s.RequestHeaders().Del(v.p.forwardPayloadHeader)
	}
	return r.authenticate(v.p, aud, false, false, v.p.extractor.extract(r.s))
}

// anyVerifier is requires_any: one child must succeed. When all fail,
// the failure told is the last one that is not a missing token (or one of
// an issuer the child does not know), as Envoy aggregates them.
type anyVerifier struct{ children []verifier }

func (v *anyVerifier) verify(r *request) status {
	final := statusMissing
	for _, c := range v.children {
		st := c.verify(r)
		if r.aborted {
			return st
		}
		if st == statusOK {
			return st
		}
		if st != statusMissing && st != statusUnknownIssuer {
			final = st
		}
	}
	return final
}

// allVerifier is requires_all: every child must succeed.
type allVerifier struct{ children []verifier }

func (v *allVerifier) verify(r *request) status {
	for _, c := range v.children {
		if st := c.verify(r); st != statusOK || r.aborted {
			return st
		}
	}
	return statusOK
}

// allowVerifier is allow_missing (failed false) and
// allow_missing_or_failed: the tokens of every provider are verified,
// each with the provider of its issuer.
type allowVerifier struct {
	all    *extractor
	failed bool
}

func (v *allowVerifier) verify(r *request) status {
	for _, name := range r.c.payloadHeaders {
		r.s.RequestHeaders().Del(name)
	}
	return r.authenticate(nil, nil, v.failed, !v.failed, v.all.extract(r.s))
}

// allowAll is a requirement that sets none: every request goes on.
type allowAll struct{}

func (allowAll) verify(*request) status { return statusOK }

// compiler compiles requirements against the providers.
type compiler struct {
	providers map[string]*provider
	all       *extractor
}

// compile compiles a requirement; errors name fields below it.
func (c *compiler) compile(req *jwtv3.JwtRequirement) (verifier, error) {
	switch t := req.GetRequiresType().(type) {
	case nil:
		return allowAll{}, nil
	case *jwtv3.JwtRequirement_ProviderName:
		p, err := c.provider(t.ProviderName)
		if err != nil {
			return nil, fmt.Errorf("provider_name: %w", err)
		}
		return &providerVerifier{p: p}, nil
	case *jwtv3.JwtRequirement_ProviderAndAudiences:
		p, err := c.provider(t.ProviderAndAudiences.GetProviderName())
		if err != nil {
			return nil, fmt.Errorf("provider_and_audiences.provider_name: %w", err)
		}
		aud := map[string]bool{}
		for _, a := range t.ProviderAndAudiences.GetAudiences() {
			aud[normalizeAudience(a)] = true
		}
		return &providerVerifier{p: p, audiences: aud}, nil
	case *jwtv3.JwtRequirement_RequiresAny:
		ch, err := c.list(t.RequiresAny.GetRequirements(), "requires_any")
		if err != nil {
			return nil, err
		}
		return &anyVerifier{children: ch}, nil
	case *jwtv3.JwtRequirement_RequiresAll:
		ch, err := c.list(t.RequiresAll.GetRequirements(), "requires_all")
		if err != nil {
			return nil, err
		}
		return &allVerifier{children: ch}, nil
	case *jwtv3.JwtRequirement_AllowMissingOrFailed:
		return &allowVerifier{all: c.all, failed: true}, nil
	case *jwtv3.JwtRequirement_AllowMissing:
		return &allowVerifier{all: c.all}, nil
	case *jwtv3.JwtRequirement_ExtractOnlyWithoutValidation:
		v, err := newExtractOnly(t.ExtractOnlyWithoutValidation, c.all)
		if err != nil {
			return nil, fmt.Errorf("extract_only_without_validation.%w", err)
		}
		return v, nil
	}
	return nil, errors.New("requires_type: not supported by Outrigger")
}

func (c *compiler) list(reqs []*jwtv3.JwtRequirement, field string) ([]verifier, error) {
	out := make([]verifier, 0, len(reqs))
	for i, r := range reqs {
		v, err := c.compile(r)
		if err != nil {
			return nil, fmt.Errorf("%s.requirements[%d].%w", field, i, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// provider finds a configured provider, with Envoy's error otherwise.
func (c *compiler) provider(name string) (*provider, error) {
	p, ok := c.providers[name]
	if !ok {
		return nil, fmt.Errorf("required provider ['%s'] is not configured", name)
	}
	return p, nil
}

// sortedKeys lists a map's names in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
