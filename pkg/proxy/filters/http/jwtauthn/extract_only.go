package jwtauthn

import (
	"fmt"
	"strings"

	jwtv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/jwt_authn/v3"
	"golang.org/x/net/http/httpguts"
)

// defaultVerificationStatusHeader is the header that tells the filters
// after jwt_authn that the claims it forwarded were not verified.
const defaultVerificationStatusHeader = "x-jwt-signature-verified"

// extractOnlyVerifier is extract_only_without_validation: the tokens at
// every provider's locations are decoded and, for each that parses, its
// provider (the first with its issuer, else the first without one)
// forwards it as a verified one would be (forward_payload_header,
// claim_to_headers, header_in_metadata, payload_in_metadata; the token
// removed unless forward) with no check of its signature, issuer, time or
// audiences, and never cached. The request always goes on. When a token
// was found, statusHeader (unless disabled with "-") is set to "false",
// as Envoy signals claims forwarded unverified.
type extractOnlyVerifier struct {
	all          *extractor
	statusHeader string
}

// newExtractOnly compiles an ExtractOnlyWithoutValidation; errors name
// the field below it.
func newExtractOnly(cfg *jwtv3.ExtractOnlyWithoutValidation, all *extractor) (*extractOnlyVerifier, error) {
	h := cfg.GetVerificationStatusHeader()
	switch {
	case h == "":
		h = defaultVerificationStatusHeader
	case h == "-":
		// Envoy's way to turn the header off.
		h = ""
	case !httpguts.ValidHeaderFieldName(h):
		return nil, fmt.Errorf("verification_status_header: %q is not a header name", h)
	}
	return &extractOnlyVerifier{all: all, statusHeader: strings.ToLower(h)}, nil
}

func (v *extractOnlyVerifier) verify(r *request) status {
	h := r.s.RequestHeaders()
	for _, name := range r.c.payloadHeaders {
		h.Del(name)
	}
	tokens := v.all.extract(r.s)
	// From the last one found, as the authenticator goes.
	for i := len(tokens) - 1; i >= 0; i-- {
		t, st := parseToken(tokens[i].raw)
		if st != statusOK {
			continue
		}
		if p := r.c.byIssuer(t.iss); p != nil {
			r.good(p, t, tokens[i])
		}
	}
	if len(tokens) > 0 && v.statusHeader != "" {
		h.Set(v.statusHeader, "false")
	}
	return statusOK
}
