package jwtauthn

import (
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
)

// extractOnlyFilter has provider "p" (issuer "iss", s's JWKS, a JWT cache,
// the payload and a claim forwarded) required on /verified, and
// extract_only_without_validation (with statusHeader, JSON, when set)
// everywhere else.
func extractOnlyFilter(t *testing.T, s *signer, statusHeader string) *compiled {
	t.Helper()
	eo := `{}`
	if statusHeader != "" {
		eo = `{"verification_status_header":` + quoted(statusHeader) + `}`
	}
	return compile(t, `{"providers":{"p":`+providerJSON("iss", jwks(t, s), `,"jwt_cache_config":{},
		"forward_payload_header":"x-payload","claim_to_headers":[{"header_name":"x-sub","claim_name":"sub"}],
		"payload_in_metadata":"pl","header_in_metadata":"hd"`)+`},
		"rules":[{"match":{"prefix":"/verified"},"requires":{"provider_name":"p"}},
		{"match":{"prefix":"/"},"requires":{"extract_only_without_validation":`+eo+`}}]}`, nil)
}

// TestExtractOnlyForwardsUnverified checks extract_only_without_validation
// with tokens a verifying requirement refuses (a key the JWKS lacks,
// expired, another audience): the request goes on with the claims
// forwarded and recorded as a verified token's would be, the token
// removed, and x-jwt-signature-verified: false; the token is not cached
// (a verifying path still refuses it after).
func TestExtractOnlyForwardsUnverified(t *testing.T) {
	s := newSigner(t, jose.ES256, "k")
	stranger := newSigner(t, jose.ES256, "other")
	c := extractOnlyFilter(t, s, "")
	for name, tok := range map[string]string{
		"unknown key": stranger.sign(t, claims(nil)),
		"expired":     s.sign(t, claims(map[string]any{"exp": testNow.Unix() - 3600})),
		"audience":    stranger.sign(t, claims(map[string]any{"aud": "elsewhere"})),
	} {
		t.Run(name, func(t *testing.T) {
			st := get("/", "authorization", "Bearer "+tok, "x-sub", "forged-by-client")
			if ok, _ := c.run(st); !ok {
				t.Fatalf("refused: %+v", st.Reply)
			}
			payload := strings.Split(tok, ".")[1]
			for h, want := range map[string]string{"x-sub": "alice", "x-payload": payload, "x-jwt-signature-verified": "false"} {
				if got := st.ReqHeaders.Values(h); len(got) != 1 || got[0] != want {
					t.Errorf("%s = %q, want %q", h, got, want)
				}
			}
			if v, ok := st.ReqHeaders.Get("authorization"); ok {
				t.Errorf("the token was forwarded: %q", v)
			}
			md := st.Metadata.GetFilterMetadata()[metadataNamespace].GetFields()
			if md["pl"].GetStructValue().GetFields()["sub"].GetStringValue() != "alice" || md["hd"].GetStructValue().GetFields()["alg"].GetStringValue() != "ES256" {
				t.Errorf("metadata %v", md)
			}
			// Never cached: the provider's own requirement still verifies it.
			st = get("/verified", "authorization", "Bearer "+tok)
			if ok, _ := c.run(st); ok {
				t.Fatal("an unverified token was accepted after extract-only saw it")
			}
		})
	}
	if c.counter("jwt_cache_hit") != 0 {
		t.Errorf("cache hits %d", c.counter("jwt_cache_hit"))
	}
}

// TestExtractOnlyStatusHeader checks when the verification status header
// is set: with any token (one that does not parse forwards nothing), not
// without; its name from verification_status_header, "-" turning it off.
func TestExtractOnlyStatusHeader(t *testing.T) {
	s := newSigner(t, jose.ES256, "k")
	good := s.sign(t, claims(nil))
	for _, tc := range []struct {
		name, cfg, header, token string
		want                     bool
	}{
		{"no token", "", "x-jwt-signature-verified", "", false},
		{"signed token", "", "x-jwt-signature-verified", good, true},
		{"malformed", "", "x-jwt-signature-verified", "not.a-token", true},
		{"custom name", "X-Unverified", "x-unverified", good, true},
		{"off", "-", "x-jwt-signature-verified", good, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := extractOnlyFilter(t, s, tc.cfg)
			hdrs := []string{}
			if tc.token != "" {
				hdrs = append(hdrs, "authorization", "Bearer "+tc.token)
			}
			st := get("/", hdrs...)
			if ok, _ := c.run(st); !ok {
				t.Fatalf("refused: %+v", st.Reply)
			}
			v, ok := st.ReqHeaders.Get(tc.header)
			if ok != tc.want || (ok && v != "false") {
				t.Errorf("%s: %q present %v, want present %v", tc.header, v, ok, tc.want)
			}
			if tc.token == "not.a-token" {
				if _, ok := st.ReqHeaders.Get("x-sub"); ok {
					t.Error("claims of a token that does not parse")
				}
			}
		})
	}
	if _, err := compileErr(`{"rules":[{"match":{"prefix":"/"},"requires":{"extract_only_without_validation":{"verification_status_header":"bad name"}}}]}`, nil); err == nil ||
		!strings.Contains(err.Error(), `rules[0].requires.extract_only_without_validation.verification_status_header: "bad name" is not a header name`) {
		t.Errorf("bad header name: %v", err)
	}
}
