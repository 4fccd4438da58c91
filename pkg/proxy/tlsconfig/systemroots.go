package tlsconfig

import (
	"crypto/x509"
	"fmt"
)

// useSystemRoots trusts the system's root certificates
// (system_root_certs, read only when trusted_ca is absent, as Envoy's API
// says): Go's pool of them, which on Linux is the distribution's bundle,
// or the file and directory named by SSL_CERT_FILE and SSL_CERT_DIR.
// The pool is read once per process.
func (v *validator) useSystemRoots() error {
	pool, err := x509.SystemCertPool()
	if err != nil {
		return fmt.Errorf("system_root_certs: cannot read the system's root certificates: %w", err)
	}
	v.roots, v.systemRoots = pool, true
	return nil
}
