package jwtauthn

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// request is one request's verification.
type request struct {
	c *filterConfig
	s httpfilter.Stream
	// metadata collects payload_in_metadata and header_in_metadata.
	metadata *structpb.Struct
	// aborted is set when the stream went away while a JWKS was fetched.
	aborted     bool
	headerAdded bool
	clearRoute  bool
}

// authenticate verifies tokens as Envoy's authenticator does: from the
// last one found, each one's issuer, time, audiences and signature; with
// p nil, each token's provider is the first with its issuer (else the
// first without one). Without allowFailed or allowMissing the first
// failure decides; else every token is tried and the last one's status
// stands, a missing token being fine with allowMissing and anything with
// allowFailed.
func (r *request) authenticate(p *provider, aud map[string]bool, allowFailed, allowMissing bool, tokens []found) status {
	if len(tokens) == 0 {
		r.failedStatus(nil, statusMissing)
		if allowFailed || allowMissing {
			return statusOK
		}
		return statusMissing
	}
	st := statusOK
	// cur is the provider of the token being verified, as far as it is
	// known: it stays from one token to the next until another is found.
	var cur *provider
	for i := len(tokens) - 1; i >= 0; i-- {
		st = r.one(p, aud, tokens[i], &cur)
		if r.aborted {
			return st
		}
		if st != statusOK {
			r.failedStatus(cur, st)
		}
		if st != statusOK && !allowFailed && !allowMissing {
			return st
		}
	}
	if allowFailed || (allowMissing && st == statusMissing) {
		return statusOK
	}
	return st
}

// one verifies one token; *cur is set to its provider once known.
func (r *request) one(p *provider, aud map[string]bool, f found, cur **provider) status {
	c := r.c
	now := c.now().Unix()
	var t *token
	if p != nil {
		*cur = p
		if p.cache != nil {
			t = p.cache.lookup(f.raw, now, p.clockSkew)
		}
		if t != nil {
			c.stats.jwtCacheHit.Inc()
		} else {
			c.stats.jwtCacheMiss.Inc()
		}
	}
	cached := t != nil
	if t == nil {
		var st status
		if t, st = parseToken(f.raw); st != statusOK {
			return st
		}
	}
	if !f.loc.issuerAllowed(t.iss) {
		return statusUnknownIssuer
	}
	if p == nil {
		p = c.byIssuer(t.iss)
		*cur = p
		if p == nil {
			return statusUnknownIssuer
		}
		aud = p.audiences
	}
	if st := t.checkTime(now, p.clockSkew); st != statusOK {
		return st
	}
	// subjects, require_expiration and max_lifetime. Envoy gives no
	// status of its own for these: a subject refused fails as a
	// verification failure, a lifetime refused as an expired token.
	if !p.subjectAllowed(t.sub) {
		return statusVerificationFail
	}
	if !p.lifetimeAllowed(now, t.exp) {
		return statusExpired
	}
	if !audiencesAllowed(aud, t.aud) {
		return statusAudienceNotAllowed
	}
	if !cached {
		keys := p.local
		if p.remote != nil {
			var fe *fetch
			if keys, fe = p.remote.get(); fe != nil {
				if !r.s.Wait(fe.done) {
					r.aborted = true
					return statusJwksFetchFail
				}
				if keys = fe.keys; keys == nil {
					return statusJwksFetchFail
				}
			}
		}
		if st := t.verifySignature(keys); st != statusOK {
			return st
		}
	}
	r.good(p, t, f)
	if p.cache != nil && !cached {
		p.cache.insert(t)
	}
	return statusOK
}

// failedStatus records a failure under the failed_status_in_metadata key
// of p (the token's provider), or, when it is not known, of the only
// provider if the filter has one, as Envoy does: the status's number and
// text, whether the request then goes on or not.
func (r *request) failedStatus(p *provider, st status) {
	if p == nil && len(r.c.order) == 1 {
		p = r.c.order[0]
	}
	if p == nil || p.failedStatusInMetadata == "" {
		return
	}
	r.setMetadata(p.failedStatusInMetadata, map[string]any{"code": float64(st), "message": st.String()})
}

// good applies a verified token: the payload and claims forwarded in
// headers, the token removed unless forward, the metadata recorded.
func (r *request) good(p *provider, t *token, f found) {
	h := r.s.RequestHeaders()
	if p.forwardPayloadHeader != "" {
		v := t.payloadB64
		if p.padPayload {
			v = padBase64(v)
		}
		h.Add(p.forwardPayloadHeader, v)
		r.headerAdded = true
	}
	for _, ch := range p.claimToHeaders {
		if v, ok := claimString(t.payload, ch.path); ok && v != "" {
			h.Add(ch.header, v)
			r.headerAdded = true
		}
	}
	if p.clearRouteCache && r.headerAdded {
		r.clearRoute = true
	}
	if !p.forward {
		f.loc.remove(r.s)
	}
	if p.headerInMetadata != "" {
		r.setMetadata(p.headerInMetadata, t.header)
	}
	if p.payloadInMetadata != "" {
		r.setMetadata(p.payloadInMetadata, normalizePayload(t.payload, p.spaceDelimited))
	}
}

// setMetadata records a decoded JSON object under key.
func (r *request) setMetadata(key string, obj map[string]any) {
	st, err := structpb.NewStruct(plainJSON(obj).(map[string]any))
	if err != nil {
		return
	}
	if r.metadata == nil {
		r.metadata = &structpb.Struct{Fields: map[string]*structpb.Value{}}
	}
	r.metadata.Fields[key] = structpb.NewStructValue(st)
}

// normalizePayload is the payload with the space-delimited claims that
// are strings split into lists of words (empty words dropped); the token's
// own payload is left as it is.
func normalizePayload(payload map[string]any, claims []string) map[string]any {
	if len(claims) == 0 {
		return payload
	}
	out := make(map[string]any, len(payload))
	for k, v := range payload {
		out[k] = v
	}
	for _, c := range claims {
		s, ok := out[c].(string)
		if !ok {
			continue
		}
		words := []any{}
		for _, w := range strings.Split(s, " ") {
			if w != "" {
				words = append(words, w)
			}
		}
		out[c] = words
	}
	return out
}

// plainJSON turns json.Numbers into float64s, as protobuf Structs hold
// numbers.
func plainJSON(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := x.Float64()
		return f
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = plainJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plainJSON(e)
		}
		return out
	}
	return v
}

// claimString is a claim's value as a header carries it: strings as they
// are, integers without a fraction, booleans as true/false, objects and
// lists as the base64 (standard, padded) of their compact JSON, as Envoy's
// addJWTClaimToHeader; null is not forwarded.
func claimString(payload map[string]any, path []string) (string, bool) {
	var v any = payload
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return "", false
		}
		if v, ok = m[k]; !ok {
			return "", false
		}
	}
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	case json.Number:
		if i, err := strconv.ParseUint(x.String(), 10, 64); err == nil {
			return strconv.FormatUint(i, 10), true
		}
		f, err := x.Float64()
		if err != nil {
			return "", false
		}
		if f >= 0 && f < 1<<64 && f == float64(uint64(f)) {
			return strconv.FormatUint(uint64(f), 10), true
		}
		// std::to_string's six decimals.
		return strconv.FormatFloat(f, 'f', 6, 64), true
	case map[string]any, []any:
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(plainJSON(x)); err != nil {
			return "", false
		}
		return base64.StdEncoding.EncodeToString(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), true
	}
	return "", false
}

// padBase64 completes base64 padding.
func padBase64(s string) string {
	if n := len(s) % 4; n != 0 {
		return s + strings.Repeat("=", 4-n)
	}
	return s
}
