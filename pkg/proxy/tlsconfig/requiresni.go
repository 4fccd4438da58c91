package tlsconfig

import "errors"

// errNoSNIMatch fails a handshake that require_sni refuses. Go's server
// sends the internal_error alert for a certificate callback's error;
// BoringSSL's servername callback in Envoy's releases that implemented
// require_sni sent unrecognized_name, which Go does not let a callback
// choose.
var errNoSNIMatch = errors.New("tls: require_sni: the client sent no server name that a certificate covers")

// coversName reports whether a certificate of the context covers the
// server name (its DNS or IP SANs, as certificateIndex matches them); an
// empty name is covered by none.
func (s *Server) coversName(name string) bool {
	if name == "" {
		return false
	}
	for i := range s.served {
		if s.served[i].Leaf.VerifyHostname(name) == nil {
			return true
		}
	}
	return false
}
