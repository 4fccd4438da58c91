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

// parseToken decodes a compact JWS as jwt_verify_lib's Jwt does, with its
// statuses for each malformation.
func parseToken(raw string) (*token, status) {
	h, rest, ok := strings.Cut(raw, ".")
	if !ok {
		return nil, statusBadFormat
	}
	p, sig, ok := strings.Cut(rest, ".")
	if !ok || strings.Contains(sig, ".") {
		return nil, statusBadFormat
	}
	t := &token{raw: raw, payloadB64: p}
	var err error
	if t.header, err = decodeObject(h); err != nil {
		return nil, statusHeaderParse
	}
	alg, ok := t.header["alg"].(string)
	if !ok {
		return nil, statusHeaderBadAlg
	}
	if t.alg, ok = algorithms[alg]; !ok {
		return nil, statusHeaderAlgInvalid
	}
	if kid, present := t.header["kid"]; present {
		if t.kid, ok = kid.(string); !ok {
			return nil, statusHeaderBadKid
		}
	}
	if t.payload, err = decodeObject(p); err != nil {
		return nil, statusPayloadParse
	}
	if !t.readClaims() {
		return nil, statusPayloadParse
	}
	if _, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(sig, "=")); err != nil || sig == "" {
		return nil, statusSignatureParse
	}
	return t, statusOK
}

// decodeObject decodes a base64url JSON object.
func decodeObject(s string) (map[string]any, error) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errNotObject
	}
	if d.More() {
		return nil, errNotObject
	}
	return m, nil
}

type parseError string

func (e parseError) Error() string { return string(e) }

const errNotObject = parseError("not a JSON object")

// readClaims reads the registered claims; false when one has the wrong
// type.
func (t *token) readClaims() bool {
	var ok bool
	if v, present := t.payload["iss"]; present {
		if t.iss, ok = v.(string); !ok {
			return false
		}
	}
	if v, present := t.payload["sub"]; present {
		if t.sub, ok = v.(string); !ok {
			return false
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
				return false
			}
			t.aud = append(t.aud, s)
		}
	default:
		return false
	}
	for _, c := range []struct {
		name string
		dst  *int64
	}{{"exp", &t.exp}, {"nbf", &t.nbf}, {"iat", &t.iat}} {
		v, present := t.payload[c.name]
		if !present {
			continue
		}
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		f, err := n.Float64()
		if err != nil || f < 0 || f > math.MaxInt64 {
			return false
		}
		*c.dst = int64(f)
	}
	return true
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
