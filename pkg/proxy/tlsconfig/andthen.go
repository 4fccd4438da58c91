package tlsconfig

import "crypto/tls"

// andThen is a VerifyConnection running verify (nil: nothing), then
// check when verify passed.
func andThen(verify, check func(tls.ConnectionState) error) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if verify != nil {
			if err := verify(cs); err != nil {
				return err
			}
		}
		return check(cs)
	}
}
