package tlsconfig

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strings"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
)

// Envoy's server defaults (server_context_config_impl.cc): TLS 1.2 to
// 1.3, the ECDHE AEAD suites and the X25519 and P-256 groups.
var (
	serverDefaultCiphers = []string{
		"ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-CHACHA20-POLY1305",
		"ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-CHACHA20-POLY1305",
		"ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-AES256-GCM-SHA384",
	}
	serverDefaultCurves = []string{"X25519", "P-256"}
)

// cipherByName maps BoringSSL's names of the TLS 1.0-1.2 cipher suites
// that Go implements to Go's IDs. TLS 1.3 suites are not configurable in
// BoringSSL either.
var cipherByName = map[string]uint16{
	"ECDHE-ECDSA-AES128-GCM-SHA256": tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	"ECDHE-RSA-AES128-GCM-SHA256":   tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	"ECDHE-ECDSA-AES256-GCM-SHA384": tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	"ECDHE-RSA-AES256-GCM-SHA384":   tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	"ECDHE-ECDSA-CHACHA20-POLY1305": tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	"ECDHE-RSA-CHACHA20-POLY1305":   tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	"ECDHE-ECDSA-AES128-SHA":        tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA,
	"ECDHE-RSA-AES128-SHA":          tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA,
	"ECDHE-ECDSA-AES256-SHA":        tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,
	"ECDHE-RSA-AES256-SHA":          tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,
	"AES128-GCM-SHA256":             tls.TLS_RSA_WITH_AES_128_GCM_SHA256,
	"AES256-GCM-SHA384":             tls.TLS_RSA_WITH_AES_256_GCM_SHA384,
	"AES128-SHA":                    tls.TLS_RSA_WITH_AES_128_CBC_SHA,
	"AES256-SHA":                    tls.TLS_RSA_WITH_AES_256_CBC_SHA,
	"ECDHE-ECDSA-AES128-SHA256":     tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256,
	"ECDHE-RSA-AES128-SHA256":       tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256,
	"AES128-SHA256":                 tls.TLS_RSA_WITH_AES_128_CBC_SHA256,
	"DES-CBC3-SHA":                  tls.TLS_RSA_WITH_3DES_EDE_CBC_SHA,
}

// cipherName is the reverse of cipherByName plus the TLS 1.3 suites, for
// the ssl.ciphers.<name> stats: BoringSSL's names, as Envoy reports them.
var cipherName = func() map[uint16]string {
	m := map[uint16]string{
		tls.TLS_AES_128_GCM_SHA256:       "TLS_AES_128_GCM_SHA256",
		tls.TLS_AES_256_GCM_SHA384:       "TLS_AES_256_GCM_SHA384",
		tls.TLS_CHACHA20_POLY1305_SHA256: "TLS_CHACHA20_POLY1305_SHA256",
	}
	for n, id := range cipherByName {
		m[id] = n
	}
	return m
}()

// curveByName maps BoringSSL's group names (and OpenSSL's aliases) to Go's.
var curveByName = map[string]tls.CurveID{
	"X25519":         tls.X25519,
	"P-256":          tls.CurveP256,
	"prime256v1":     tls.CurveP256,
	"P-384":          tls.CurveP384,
	"secp384r1":      tls.CurveP384,
	"P-521":          tls.CurveP521,
	"secp521r1":      tls.CurveP521,
	"X25519MLKEM768": tls.X25519MLKEM768,
}

// curveNames names the groups for the ssl.curves.<name> stats, as
// BoringSSL does.
var curveNames = map[uint16]string{
	uint16(tls.X25519):         "X25519",
	uint16(tls.CurveP256):      "P-256",
	uint16(tls.CurveP384):      "P-384",
	uint16(tls.CurveP521):      "P-521",
	uint16(tls.X25519MLKEM768): "X25519MLKEM768",
}

// versionNames name the protocol versions as Envoy's ssl.versions stats
// do.
var versionNames = map[uint16]string{
	tls.VersionTLS10: "TLSv1",
	tls.VersionTLS11: "TLSv1.1",
	tls.VersionTLS12: "TLSv1.2",
	tls.VersionTLS13: "TLSv1.3",
}

// versionName names a protocol version as Envoy's ssl.versions stats do.
func versionName(v uint16) string { return versionNames[v] }

// protocolVersion maps a TlsProtocol value; auto is the default.
func protocolVersion(p tlsv3.TlsParameters_TlsProtocol, auto uint16) uint16 {
	switch p {
	case tlsv3.TlsParameters_TLSv1_0:
		return tls.VersionTLS10
	case tlsv3.TlsParameters_TLSv1_1:
		return tls.VersionTLS11
	case tlsv3.TlsParameters_TLSv1_2:
		return tls.VersionTLS12
	case tlsv3.TlsParameters_TLSv1_3:
		return tls.VersionTLS13
	}
	return auto
}

// applyParams sets the protocol versions, cipher suites and curves of cfg
// from tls_params, with Envoy's defaults: maxVersion is the side's default
// maximum (TLS 1.3 for servers, 1.2 for clients; the ciphers and curves
// are the same). Errors name the field below tls_params.
func applyParams(cfg *tls.Config, p *tlsv3.TlsParameters, maxVersion uint16) error {
	var errs []error
	cfg.MinVersion = protocolVersion(p.GetTlsMinimumProtocolVersion(), tls.VersionTLS12)
	cfg.MaxVersion = protocolVersion(p.GetTlsMaximumProtocolVersion(), maxVersion)
	if cfg.MinVersion > cfg.MaxVersion {
		errs = append(errs, fmt.Errorf("tls_minimum_protocol_version: %s is above tls_maximum_protocol_version %s",
			versionName(cfg.MinVersion), versionName(cfg.MaxVersion)))
	}
	names, err := cipherList(p.GetCipherSuites())
	if err != nil {
		errs = append(errs, err)
	}
	if len(names) == 0 {
		names = serverDefaultCiphers
	}
	for _, n := range names {
		cfg.CipherSuites = append(cfg.CipherSuites, cipherByName[n])
	}
	curves := p.GetEcdhCurves()
	if len(curves) == 0 {
		curves = serverDefaultCurves
	}
	for i, n := range curves {
		id, ok := curveByName[n]
		if !ok {
			errs = append(errs, fmt.Errorf("ecdh_curves[%d]: unknown or unsupported curve %q (supported: X25519, P-256, P-384, P-521, X25519MLKEM768)", i, n))
			continue
		}
		cfg.CurvePreferences = append(cfg.CurvePreferences, id)
	}
	return errors.Join(errs...)
}

// cipherList reads cipher_suites: each entry is a cipher name, a group of
// equally preferred ones ("[A|B]"), or a colon-separated list of these, as
// BoringSSL reads them. Go orders the suites by its own preference, so the
// groups only contribute their members. Unknown names are refused.
func cipherList(list []string) ([]string, error) {
	var (
		out  []string
		errs []error
	)
	for i, entry := range list {
		for _, item := range strings.Split(entry, ":") {
			if item == "" {
				continue
			}
			if strings.HasPrefix(item, "[") && strings.HasSuffix(item, "]") {
				item = item[1 : len(item)-1]
			}
			for _, n := range strings.Split(item, "|") {
				if _, ok := cipherByName[n]; !ok {
					errs = append(errs, fmt.Errorf("cipher_suites[%d]: unknown or unsupported cipher suite %q", i, n))
					continue
				}
				out = append(out, n)
			}
		}
	}
	if len(list) > 0 && len(out) == 0 && len(errs) == 0 {
		errs = append(errs, errors.New("cipher_suites: no cipher suite given"))
	}
	return out, errors.Join(errs...)
}
