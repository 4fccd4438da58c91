package jwtauthn

// status is the outcome of verifying a request's tokens. Its number is
// the one of Envoy's jwt_verify Status enum (failed_status_in_metadata
// reports it as the code) and its text Envoy's getStatusString: the body
// of the 401 and, with spaces as underscores, the response code details.
// The values follow Envoy's enum in order, so none may be removed or moved.
type status uint8

const (
	statusOK status = iota
	statusMissing
	statusNotYetValid
	statusExpired
	statusBadFormat
	statusHeaderBadBase64
	statusHeaderBadJSON
	statusHeaderBadAlg
	statusHeaderAlgNotImplemented
	statusHeaderBadKid
	statusPayloadBadBase64
	statusPayloadBadJSON
	statusPayloadIssNotString
	statusPayloadSubNotString
	statusPayloadIatNotInteger
	statusPayloadIatOutOfRange
	statusPayloadNbfNotInteger
	statusPayloadNbfOutOfRange
	statusPayloadExpNotInteger
	statusPayloadExpOutOfRange
	statusPayloadJtiNotString
	statusPayloadAudNotString
	statusSignatureBadBase64
	statusEd25519SignatureWrongLength
	statusUnknownIssuer
	statusAudienceNotAllowed
	statusVerificationFail
	statusMultipleTokens
	statusJwksParseError
	statusJwksNoKeys
	statusJwksBadKeys
	statusJwksNoValidKeys
	statusJwksKidAlgMismatch
	statusJwksRsaParseError
	statusJwksEcCreateKeyFail
	statusJwksEcXorYBadBase64
	statusJwksEcParseError
	statusJwksOctBadBase64
	statusJwksOKPXBadBase64
	statusJwksOKPXWrongLength
	statusJwksFetchFail
)

var statusText = [...]string{
	statusOK:                          "OK",
	statusMissing:                     "Jwt is missing",
	statusNotYetValid:                 "Jwt not yet valid",
	statusExpired:                     "Jwt is expired",
	statusBadFormat:                   "Jwt is not in the form of Header.Payload.Signature with two dots and 3 sections",
	statusHeaderBadBase64:             "Jwt header is an invalid Base64url encoded",
	statusHeaderBadJSON:               "Jwt header is an invalid JSON",
	statusHeaderBadAlg:                "Jwt header [alg] field is required and must be a string",
	statusHeaderAlgNotImplemented:     "Jwt header [alg] is not supported",
	statusHeaderBadKid:                "Jwt header [kid] field is not a string",
	statusPayloadBadBase64:            "Jwt payload is an invalid Base64url encoded",
	statusPayloadBadJSON:              "Jwt payload is an invalid JSON",
	statusPayloadIssNotString:         "Jwt payload [iss] field is not a string",
	statusPayloadSubNotString:         "Jwt payload [sub] field is not a string",
	statusPayloadIatNotInteger:        "Jwt payload [iat] field is not an integer",
	statusPayloadIatOutOfRange:        "Jwt payload [iat] field is not a positive 64 bit integer",
	statusPayloadNbfNotInteger:        "Jwt payload [nbf] field is not an integer",
	statusPayloadNbfOutOfRange:        "Jwt payload [nbf] field is not a positive 64 bit integer",
	statusPayloadExpNotInteger:        "Jwt payload [exp] field is not an integer",
	statusPayloadExpOutOfRange:        "Jwt payload [exp] field is not a positive 64 bit integer",
	statusPayloadJtiNotString:         "Jwt payload [jti] field is not a string",
	statusPayloadAudNotString:         "Jwt payload [aud] field is not a string or string list",
	statusSignatureBadBase64:          "Jwt signature is an invalid Base64url encoded",
	statusEd25519SignatureWrongLength: "Jwt ED25519 signature is wrong length",
	statusUnknownIssuer:               "Jwt issuer is not configured",
	statusAudienceNotAllowed:          "Audiences in Jwt are not allowed",
	statusVerificationFail:            "Jwt verification fails",
	statusMultipleTokens:              "Found multiple Jwt tokens",
	statusJwksParseError:              "Jwks is an invalid JSON",
	statusJwksNoKeys:                  "Jwks does not have [keys] field",
	statusJwksBadKeys:                 "[keys] in Jwks is not an array",
	statusJwksNoValidKeys:             "Jwks doesn't have any valid public key",
	statusJwksKidAlgMismatch:          "Jwks doesn't have key to match kid or alg from Jwt",
	statusJwksRsaParseError:           "Jwks RSA [n] or [e] field is missing or has a parse error",
	statusJwksEcCreateKeyFail:         "Jwks EC create key fail",
	statusJwksEcXorYBadBase64:         "Jwks EC [x] or [y] field is an invalid Base64.",
	statusJwksEcParseError:            "Jwks EC [x] and [y] fields have a parse error.",
	statusJwksOctBadBase64:            "Jwks Oct key is an invalid Base64",
	statusJwksOKPXBadBase64:           "Jwks OKP [x] field is an invalid Base64.",
	statusJwksOKPXWrongLength:         "Jwks OKP [x] field is wrong length.",
	statusJwksFetchFail:               "Jwks remote fetch is failed",
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
