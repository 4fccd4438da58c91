package jwtauthn

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"strings"

	jose "github.com/go-jose/go-jose/v4"
)

// algorithms are the JWS algorithms Envoy verifies.
var algorithms = map[string]jose.SignatureAlgorithm{
	"RS256": jose.RS256, "RS384": jose.RS384, "RS512": jose.RS512,
	"PS256": jose.PS256, "PS384": jose.PS384, "PS512": jose.PS512,
	"ES256": jose.ES256, "ES384": jose.ES384, "ES512": jose.ES512,
	"EdDSA": jose.EdDSA,
	"HS256": jose.HS256, "HS384": jose.HS384, "HS512": jose.HS512,
}

// token is a parsed JWT: its header and payload decoded and its claims
// read, its signature not yet checked.
type token struct {
	raw string
	// alg and kid are the header's.
	alg jose.SignatureAlgorithm
	kid string
	// payloadB64 is the payload as the token carries it (base64url,
	// unpadded), forwarded by forward_payload_header.
	payloadB64 string
	// header and payload are the decoded JSON objects, for metadata and
	// claim_to_headers.
	header, payload map[string]any
	iss, sub        string
	aud             []string
	// exp, nbf and iat are 0 when absent.
	exp, nbf, iat int64
}

// parseToken decodes a compact JWS as Envoy's Jwt::parseFromString does,
// with its status for each malformation, in its order.
func parseToken(raw string) (*token, status) {
	// Three non-empty sections (empty ones are skipped, then counted).
	parts := make([]string, 0, 3)
	for _, s := range strings.Split(raw, ".") {
		if s != "" {
			parts = append(parts, s)
		}
	}
	if len(parts) != 3 {
		return nil, statusBadFormat
	}
	h, p, sig := parts[0], parts[1], parts[2]
	t := &token{raw: raw, payloadB64: p}
	var st status
	if t.header, st = decodeObject(h, statusHeaderBadBase64, statusHeaderBadJSON); st != statusOK {
		return nil, st
	}
	alg, ok := t.header["alg"].(string)
	if !ok {
		return nil, statusHeaderBadAlg
	}
	if t.alg, ok = algorithms[alg]; !ok {
		return nil, statusHeaderAlgNotImplemented
	}
	if kid, present := t.header["kid"]; present {
		if t.kid, ok = kid.(string); !ok {
			return nil, statusHeaderBadKid
		}
	}
	if t.payload, st = decodeObject(p, statusPayloadBadBase64, statusPayloadBadJSON); st != statusOK {
		return nil, st
	}
	if st := t.readClaims(); st != statusOK {
		return nil, st
	}
	if _, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(sig, "=")); err != nil {
		return nil, statusSignatureBadBase64
	}
	return t, statusOK
}

// decodeObject decodes a base64url JSON object; badB64 or badJSON tell
// which part failed.
func decodeObject(s string, badB64, badJSON status) (map[string]any, status) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return nil, badB64
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil || m == nil || d.More() {
		return nil, badJSON
	}
	return m, statusOK
}

// readClaims reads the registered claims in Envoy's order, with the
// status of the first that has the wrong type.
func (t *token) readClaims() status {
	var ok bool
	if v, present := t.payload["iss"]; present {
		if t.iss, ok = v.(string); !ok {
			return statusPayloadIssNotString
		}
	}
	if v, present := t.payload["sub"]; present {
		if t.sub, ok = v.(string); !ok {
			return statusPayloadSubNotString
		}
	}
	for _, c := range []struct {
		name                 string
		dst                  *int64
		notInteger, outRange status
	}{
		{"iat", &t.iat, statusPayloadIatNotInteger, statusPayloadIatOutOfRange},
		{"nbf", &t.nbf, statusPayloadNbfNotInteger, statusPayloadNbfOutOfRange},
		{"exp", &t.exp, statusPayloadExpNotInteger, statusPayloadExpOutOfRange},
	} {
		v, present := t.payload[c.name]
		if !present {
			continue
		}
		n, ok := v.(json.Number)
		if !ok {
			return c.notInteger
		}
		f, err := n.Float64()
		if err != nil || f < 0 || f >= math.MaxUint64 {
			return c.outRange
		}
		*c.dst = math.MaxInt64 // times past int64 are as good as never
		if f < math.MaxInt64 {
			*c.dst = int64(f)
		}
	}
	if v, present := t.payload["jti"]; present {
		if _, ok := v.(string); !ok {
			return statusPayloadJtiNotString
		}
	}
	switch v := t.payload["aud"].(type) {
	case nil:
	case string:
		t.aud = []string{v}
	case []any:
		for _, a := range v {
			s, ok := a.(string)
			if !ok {
				return statusPayloadAudNotString
			}
			t.aud = append(t.aud, s)
		}
	default:
		return statusPayloadAudNotString
	}
	return statusOK
}

// checkTime applies exp and nbf with the clock skew, as
// verifyTimeConstraint does.
func (t *token) checkTime(now, skew int64) status {
	if t.nbf > 0 && now+skew < t.nbf {
		return statusNotYetValid
	}
	if t.exp > 0 && now > t.exp+skew {
		return statusExpired
	}
	return statusOK
}

// verifySignature checks the signature with the keys that may have made
// it: those whose kid and alg (when set) are the token's and whose type
// fits the algorithm.
func (t *token) verifySignature(keys *keySet) status {
	if keys == nil || len(keys.keys) == 0 {
		return statusJwksNoValidKeys
	}
	jws, err := jose.ParseSignedCompact(t.raw, []jose.SignatureAlgorithm{t.alg})
	if err != nil {
		return statusVerificationFail
	}
	tried := false
	for i := range keys.keys {
		k := &keys.keys[i]
		if t.kid != "" && k.KeyID != "" && k.KeyID != t.kid {
			continue
		}
		if k.Algorithm != "" && k.Algorithm != string(t.alg) {
			continue
		}
		if !keyFits(k.Key, t.alg) {
			continue
		}
		tried = true
		if _, err := jws.Verify(k.Key); err == nil {
			return statusOK
		}
	}
	if !tried {
		return statusJwksKidAlgMismatch
	}
	return statusVerificationFail
}

// audiencesAllowed is jwt_verify_lib's CheckAudience: no configured
// audiences allow any; else one of the token's must be configured, both
// compared without an http(s):// scheme and a trailing slash.
func audiencesAllowed(allowed map[string]bool, aud []string) bool {
	if len(allowed) == 0 {
		return true
	}
	for _, a := range aud {
		if allowed[normalizeAudience(a)] {
			return true
		}
	}
	return false
}

// normalizeAudience strips a scheme and a trailing slash.
func normalizeAudience(a string) string {
	if s, ok := strings.CutPrefix(a, "http://"); ok {
		a = s
	} else if s, ok := strings.CutPrefix(a, "https://"); ok {
		a = s
	}
	return strings.TrimSuffix(a, "/")
}
