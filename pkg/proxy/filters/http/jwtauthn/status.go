package jwtauthn

// status is the outcome of verifying a request's tokens. Its text is
// Envoy's (jwt_verify_lib's getStatusString): it is the body of the 401
// and, with spaces as underscores, the response code details.
type status uint8

const (
	statusOK status = iota
	statusMissing
	statusNotYetValid
	statusExpired
	statusBadFormat
	statusHeaderParse
	statusHeaderBadAlg
	statusHeaderAlgInvalid
	statusHeaderBadKid
	statusPayloadParse
	statusSignatureParse
	statusUnknownIssuer
	statusAudienceNotAllowed
	statusVerificationFail
	statusJwksNoValidKeys
	statusJwksKidAlgMismatch
	statusJwksFetchFail
)

var statusText = [...]string{
	statusOK:                 "OK",
	statusMissing:            "Jwt is missing",
	statusNotYetValid:        "Jwt not yet valid",
	statusExpired:            "Jwt is expired",
	statusBadFormat:          "Jwt is not in the form of Header.Payload.Signature",
	statusHeaderParse:        "Jwt header is an invalid Base64url input or an invalid JSON",
	statusHeaderBadAlg:       "Jwt header [alg] field is not a string",
	statusHeaderAlgInvalid:   "Jwt header [alg] field value is invalid",
	statusHeaderBadKid:       "Jwt header [kid] field is not a string",
	statusPayloadParse:       "Jwt payload is an invalid Base64 or an invalid JSON",
	statusSignatureParse:     "Jwt signature is an invalid Base64",
	statusUnknownIssuer:      "Jwt issuer is not configured",
	statusAudienceNotAllowed: "Audiences in Jwt are not allowed",
	statusVerificationFail:   "Jwt verification fails",
	statusJwksNoValidKeys:    "Jwks doesn't have any valid public key",
	statusJwksKidAlgMismatch: "Jwks doesn't have key to match kid or alg from Jwt",
	statusJwksFetchFail:      "Jwks remote fetch is failed",
}

func (s status) String() string { return statusText[s] }

// details is the response code details of a failure:
// jwt_authn_access_denied{<text with underscores>}.
func details(text string) string {
	b := []byte(text)
	for i, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r', '\f', '\v':
			b[i] = '_'
		}
	}
	return "jwt_authn_access_denied{" + string(b) + "}"
}
