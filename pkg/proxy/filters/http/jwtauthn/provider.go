package jwtauthn

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	jwtv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/jwt_authn/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/datasource"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// Envoy's defaults.
const (
	defaultClockSkew = 60
	// 600 s, as Envoy's PubkeyCacheExpirationSec (whose comment says 5
	// minutes) and the API's documentation (10 minutes).
	defaultCacheDuration = 10 * time.Minute
	defaultJWTCacheSize  = 100
	defaultFailedRefetch = time.Second
)

// provider is a compiled JwtProvider.
type provider struct {
	name      string
	issuer    string
	audiences map[string]bool
	// extractor is the provider's own locations.
	extractor            extractor
	forward              bool
	forwardPayloadHeader string
	padPayload           bool
	payloadInMetadata    string
	headerInMetadata     string
	// failedStatusInMetadata is the metadata key of a failure's status.
	failedStatusInMetadata string
	// spaceDelimited are normalize_payload_in_metadata's claims: string
	// values become lists of their space-separated words in the
	// metadata.
	spaceDelimited  []string
	claimToHeaders  []claimHeader
	clockSkew       int64
	clearRouteCache bool
	// subjects is the subjects matcher, nil when any subject is allowed.
	subjects *router.StringMatcher
	// maxLifetime bounds exp - now: require_expiration makes it
	// unbounded (but exp required), max_lifetime sets it; hasMaxLifetime
	// is false when neither is set.
	maxLifetime    time.Duration
	hasMaxLifetime bool
	// local is local_jwks' keys (nil when they are invalid: requests
	// then fail with "Jwks doesn't have any valid public key"); remote
	// is remote_jwks.
	local  *keySet
	remote *remoteJWKS
	// cache is the jwt_cache_config cache of verified tokens, nil when
	// unset.
	cache *jwtCache
}

// claimHeader is one claim_to_headers entry.
type claimHeader struct {
	header string
	// path is the claim name split at its dots (nested claims).
	path []string
}

// compileProvider compiles one provider; errors name fields below it.
func compileProvider(name string, p *jwtv3.JwtProvider, ctx httpfilter.Context) (*provider, error) {
	pr := &provider{
		name:                   name,
		issuer:                 p.GetIssuer(),
		forward:                p.GetForward(),
		forwardPayloadHeader:   strings.ToLower(p.GetForwardPayloadHeader()),
		padPayload:             p.GetPadForwardPayloadHeader(),
		payloadInMetadata:      p.GetPayloadInMetadata(),
		headerInMetadata:       p.GetHeaderInMetadata(),
		failedStatusInMetadata: p.GetFailedStatusInMetadata(),
		spaceDelimited:         p.GetNormalizePayloadInMetadata().GetSpaceDelimitedClaims(),
		clockSkew:              int64(p.GetClockSkewSeconds()),
		clearRouteCache:        p.GetClearRouteCache(),
	}
	if pr.clockSkew == 0 {
		pr.clockSkew = defaultClockSkew
	}
	if len(p.GetAudiences()) > 0 {
		pr.audiences = make(map[string]bool, len(p.GetAudiences()))
		for _, a := range p.GetAudiences() {
			pr.audiences[normalizeAudience(a)] = true
		}
	}
	if m := p.GetSubjects(); m != nil {
		sm, err := router.CompileStringMatcher(m)
		if err != nil {
			return nil, fmt.Errorf("subjects.%w", err)
		}
		pr.subjects = &sm
	}
	if p.GetRequireExpiration() {
		pr.maxLifetime, pr.hasMaxLifetime = unboundedLifetime, true
	}
	if ml := p.GetMaxLifetime(); ml != nil {
		// max_lifetime takes precedence over require_expiration.
		if err := ml.CheckValid(); err != nil || ml.AsDuration() < 0 {
			return nil, errors.New("max_lifetime: must be a valid, non-negative duration")
		}
		pr.maxLifetime, pr.hasMaxLifetime = ml.AsDuration(), true
	}
	addLocations(&pr.extractor, p)
	for i, ch := range p.GetClaimToHeaders() {
		path, err := claimPath(ch)
		if err != nil {
			return nil, fmt.Errorf("claim_to_headers[%d].%w", i, err)
		}
		pr.claimToHeaders = append(pr.claimToHeaders, claimHeader{
			header: strings.ToLower(ch.GetHeaderName()),
			path:   path,
		})
	}
	if cc := p.GetJwtCacheConfig(); cc != nil {
		size := int(cc.GetJwtCacheSize())
		if size == 0 {
			size = defaultJWTCacheSize
		}
		pr.cache = newJWTCache(size, int(cc.GetJwtMaxTokenSize()))
	}
	switch src := p.GetJwksSourceSpecifier().(type) {
	case *jwtv3.JwtProvider_LocalJwks:
		if src.LocalJwks.GetSpecifier() == nil {
			return nil, errors.New("local_jwks.specifier: must be set")
		}
		data, err := datasource.Read(src.LocalJwks)
		if err != nil {
			return nil, fmt.Errorf("local_jwks.%w", err)
		}
		// An empty source gives no keys (the provider's requests fail);
		// anything else must be a JWKS, PEM keys included, as Envoy's
		// filter factory requires.
		if len(data) > 0 {
			ks, st := parseJWKS(data)
			if st != statusOK {
				return nil, fmt.Errorf("local_jwks: Provider '%s' in jwt_authn config has invalid local jwks: %s", name, st)
			}
			pr.local = ks
		}
	case *jwtv3.JwtProvider_RemoteJwks:
		rj := src.RemoteJwks
		uri := rj.GetHttpUri()
		timeout := uri.GetTimeout().AsDuration()
		if timeout <= 0 {
			return nil, fmt.Errorf("remote_jwks.http_uri.timeout: must be positive")
		}
		dur := defaultCacheDuration
		if rj.GetCacheDuration() != nil {
			if dur = rj.GetCacheDuration().AsDuration(); dur <= 0 {
				return nil, fmt.Errorf("remote_jwks.cache_duration: must be positive")
			}
		}
		r, err := newRemoteJWKS(uri.GetUri(), uri.GetCluster(), timeout, dur, ctx.Services)
		if err != nil {
			return nil, fmt.Errorf("remote_jwks.%w", err)
		}
		r.now = ctx.Now
		if err := r.setRetryPolicy(rj.GetRetryPolicy()); err != nil {
			r.Close()
			return nil, fmt.Errorf("remote_jwks.retry_policy.%w", err)
		}
		if af := rj.GetAsyncFetch(); af != nil {
			if err := r.setAsyncFetch(af, ctx.Services); err != nil {
				r.Close()
				return nil, fmt.Errorf("remote_jwks.async_fetch.%w", err)
			}
		}
		pr.remote = r
	default:
		return nil, fmt.Errorf("jwks_source_specifier: one of remote_jwks or local_jwks is required")
	}
	return pr, nil
}

// claimPath is a claim_to_headers entry's path to its claim: claim_name
// split at its dots, or claim_path's keys taken whole (so that names with
// dots, such as URL-namespaced claims, can be reached). Exactly one of the
// two must be set.
func claimPath(ch *jwtv3.JwtClaimToHeader) ([]string, error) {
	switch name, segs := ch.GetClaimName(), ch.GetClaimPath(); {
	case name != "" && len(segs) > 0:
		return nil, errors.New("claim_path: exactly one of claim_name and claim_path must be set, not both")
	case name != "":
		return strings.Split(name, "."), nil
	case len(segs) == 0:
		return nil, errors.New("claim_name: exactly one of claim_name and claim_path must be set")
	default:
		path := make([]string, len(segs))
		for i, sg := range segs {
			if sg.GetKey() == "" {
				return nil, fmt.Errorf("claim_path[%d].key: must be set", i)
			}
			path[i] = sg.GetKey()
		}
		return path, nil
	}
}

// addLocations adds a provider's token locations to e; without any, the
// default ones: Authorization: Bearer and the access_token parameter.
func addLocations(e *extractor, p *jwtv3.JwtProvider) {
	iss := p.GetIssuer()
	if len(p.GetFromHeaders()) == 0 && len(p.GetFromParams()) == 0 && len(p.GetFromCookies()) == 0 {
		e.add(locHeader, "authorization", "Bearer ", iss)
		e.add(locParam, "access_token", "", iss)
		return
	}
	for _, h := range p.GetFromHeaders() {
		e.add(locHeader, strings.ToLower(h.GetName()), h.GetValuePrefix(), iss)
	}
	for _, q := range p.GetFromParams() {
		e.add(locParam, q, "", iss)
	}
	for _, c := range p.GetFromCookies() {
		e.add(locCookie, c, "", iss)
	}
}

// subjectAllowed reports whether the token's sub is one the provider may
// assert (subjects; any without it), as Envoy's isSubjectAllowed.
func (p *provider) subjectAllowed(sub string) bool {
	return p.subjects == nil || p.subjects.Match(sub)
}

// lifetimeAllowed applies require_expiration and max_lifetime as Envoy's
// isLifetimeAllowed does: with either set, a token needs an exp, and its
// remaining lifetime (exp - now) must be under max_lifetime.
func (p *provider) lifetimeAllowed(now, exp int64) bool {
	switch {
	case !p.hasMaxLifetime:
		return true
	case exp == 0:
		return false
	case p.maxLifetime == unboundedLifetime:
		return true
	}
	left := exp - now
	if left >= int64(unboundedLifetime/time.Second) {
		return false // past any duration max_lifetime can hold
	}
	return time.Duration(left)*time.Second < p.maxLifetime
}

// unboundedLifetime is require_expiration's bound: any exp will do.
const unboundedLifetime = time.Duration(math.MaxInt64)
