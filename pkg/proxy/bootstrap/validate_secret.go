package bootstrap

import (
	"errors"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
)

// ValidateSecret checks one secret from discovery (SDS) with the rules of
// a static secret: its constraints and the support table, errors
// relative to the secret.
func ValidateSecret(s *tlsv3.Secret, ext *extension.Registry) error {
	if s == nil {
		return &FieldError{Reason: "no secret"}
	}
	return errors.Join(constraintAndSupportErrors(s, ext)...)
}
