package tlsconfig

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync/atomic"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
)

// defaultMaxSessionKeys is Envoy's max_session_keys when unset: one
// session kept for resumption.
const defaultMaxSessionKeys = 1

// ALPN protocol names the upstream pools offer when alpn_protocols is
// empty, as Envoy's pools do (its "ALPN fallback").
const (
	ALPNHTTP11 = "http/1.1"
	ALPNHTTP2  = "h2"
)

// Client is a compiled UpstreamTlsContext: what a cluster needs to run
// the client side of TLS handshakes with its hosts.
type Client struct {
	// cfg has everything but NextProtos, which depends on the pool (see
	// Handshake); the session cache is shared by the clones.
	cfg  *tls.Config
	alpn []string
	v    *validator
	// certs are what /certs shows of the context.
	certs contextCerts
	// next is the context compiled from its secrets' latest values, nil
	// until one changes; handshakes use it from then on.
	next atomic.Pointer[Client]
	// ready is closed once its secrets have come (nil: they had).
	ready <-chan struct{}
	// autoHostSNI sends the host's hostname as the server name
	// (auto_host_sni); autoSNISAN checks the server name sent against the
	// certificate's DNS SANs in place of the SAN matchers
	// (auto_sni_san_validation).
	autoHostSNI, autoSNISAN bool
	// keyLog is key_log, nil when keys are not logged.
	keyLog *keyLog
	// fips is compliance policy FIPS_202205 (see withFIPS202205).
	fips bool
}

// finalCheck adds the compliance policy's check to verify.
func (cl *Client) finalCheck(verify func(tls.ConnectionState) error) func(tls.ConnectionState) error {
	if cl.fips {
		return withFIPS202205(verify)
	}
	return verify
}

// Ready is closed once the secrets the context uses have their first
// values, or their sources gave up waiting: what its listener or cluster
// warms for.
func (cl *Client) Ready() <-chan struct{} {
	if cl.ready == nil {
		return closedChan()
	}
	return cl.ready
}

// current is the context new handshakes use.
func (cl *Client) current() *Client {
	if n := cl.next.Load(); n != nil {
		return n
	}
	return cl
}

// CompileClient compiles an UpstreamTlsContext. Errors name the field
// path below it, one per problem (joined). A key_log is refused: it needs
// CompileClientWithSecrets's opener.
func CompileClient(uc *tlsv3.UpstreamTlsContext) (*Client, error) {
	return compileClient(uc, nil)
}

// compileClient is CompileClient opening key logs with open.
func compileClient(uc *tlsv3.UpstreamTlsContext, open KeyLogOpener) (*Client, error) {
	var errs []error
	ctc := uc.GetCommonTlsContext()
	cfg := &tls.Config{ServerName: uc.GetSni()}
	if strings.ContainsRune(uc.GetSni(), 0) {
		errs = append(errs, errors.New("sni: SNI names containing NULL-byte are not allowed"))
	}
	if uc.GetAllowRenegotiation() {
		// Go's client can renegotiate, but only as a whole-connection
		// policy without the checks BoringSSL applies; refused rather
		// than half-supported.
		errs = append(errs, errors.New("allow_renegotiation: TLS renegotiation is not supported by Outrigger"))
	}
	if err := applyParams(cfg, ctc.GetTlsParams(), tls.VersionTLS12); err != nil {
		errs = append(errs, fieldpath.Split(fieldpath.Prefix("common_tls_context.tls_params.", err))...)
	}
	fips, err := applyCompliance(cfg, ctc.GetTlsParams())
	if err != nil {
		errs = append(errs, err)
	}
	if len(ctc.GetTlsParams().GetSignatureAlgorithms()) > 0 {
		errs = append(errs, fieldpath.Prefix("common_tls_context.tls_params.", errPeerSignatures("on an UpstreamTlsContext")))
	}
	tlsCerts := ctc.GetTlsCertificates()
	if len(tlsCerts) > 1 {
		errs = append(errs, errors.New("common_tls_context.tls_certificates: Multiple TLS certificates are not supported for client contexts"))
	}
	var certs contextCerts
	if len(tlsCerts) == 1 && tlsCerts[0].GetTlsParams() != nil {
		errs = append(errs, fieldpath.Prefix(certParamsPath(0), errClientCertParams))
	}
	if len(tlsCerts) == 1 && tlsCerts[0].GetOcspStaple() != nil {
		// A client is not asked for a staple.
		errs = append(errs, errors.New("common_tls_context.tls_certificates[0].ocsp_staple: OCSP staples are for server certificates; not supported on an UpstreamTlsContext"))
	}
	if len(tlsCerts) == 1 {
		certs0 := tlsCerts[0]
		c, err := loadCertificate(certs0)
		if err != nil {
			errs = append(errs, fieldpath.Split(fieldpath.Prefix("common_tls_context.tls_certificates[0].", err))...)
		} else {
			certs.chain = []loadedCert{{path: certificatePath(certs0), cert: c.Leaf}}
			if fips {
				c.SupportedSignatureAlgorithms = fipsSignatures
			}
			// BoringSSL sends the configured certificate whatever CAs the
			// server names; Go's default would send none when they differ.
			cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &c, nil }
		}
	}
	v := &validator{}
	if vc := ctc.GetValidationContext(); vc != nil {
		var err error
		if v, err = compileValidation(vc); err != nil {
			errs = append(errs, fieldpath.Split(fieldpath.Prefix("common_tls_context.validation_context.", err))...)
		}
	}
	kl, err := compileKeyLog(ctc.GetKeyLog(), open)
	if err != nil {
		errs = append(errs, fieldpath.Split(fieldpath.Prefix("common_tls_context.", err))...)
	}
	if uc.GetAutoSniSanValidation() {
		// Envoy refuses the option where nothing would check the chain.
		switch {
		case ctc.GetValidationContext() == nil:
			errs = append(errs, errors.New("auto_sni_san_validation: 'auto_sni_san_validation' was configured without a validation context"))
		case v.roots == nil:
			errs = append(errs, errors.New("auto_sni_san_validation: 'auto_sni_san_validation' was configured without configuring a trusted CA"))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// Without a validation context Envoy accepts any server certificate;
	// with one, the validator does all the checks (not Go's, which would
	// also match the host name).
	cfg.InsecureSkipVerify = true
	if v.active() {
		v.require = true // a server always presents one; none fails
		cfg.VerifyConnection = v.connectionCheck(v.verify)
	}
	// Envoy always checks the server certificate's key usage now
	// (enforce_rsa_key_usage is deprecated and ignored).
	cfg.VerifyConnection = withKeyUsage(cfg.VerifyConnection)
	if fips {
		cfg.VerifyConnection = withFIPS202205(cfg.VerifyConnection)
	}
	n := defaultMaxSessionKeys
	if m := uc.GetMaxSessionKeys(); m != nil {
		n = int(m.GetValue())
	}
	if n > 0 {
		cfg.ClientSessionCache = tls.NewLRUClientSessionCache(n)
	}
	certs.ca = v.firstCA
	return &Client{cfg: cfg, alpn: ctc.GetAlpnProtocols(), v: v, certs: certs,
		autoHostSNI: uc.GetAutoHostSni(), autoSNISAN: uc.GetAutoSniSanValidation(), keyLog: kl, fips: fips}, nil
}

// HandshakeError is a failed upstream TLS handshake.
type HandshakeError struct {
	Err error
}

func (e *HandshakeError) Error() string { return "TLS handshake: " + e.Err.Error() }

// Unwrap returns the cause.
func (e *HandshakeError) Unwrap() error { return e.Err }

// FailureReason is the failure as Envoy reports it in
// %UPSTREAM_TRANSPORT_FAILURE_REASON% and response details: BoringSSL's
// error in Envoy's "TLS_error:|code:lib:func:REASON:TLS_error_end" form,
// for the failures both libraries name alike; Go's text otherwise.
func (e *HandshakeError) FailureReason() string {
	var (
		ve *VerifyError
		rh tls.RecordHeaderError
	)
	reason := ""
	switch {
	case errors.As(e.Err, &ve):
		reason = "268435581:SSL routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED"
	case errors.As(e.Err, &rh):
		reason = "268435703:SSL routines:OPENSSL_internal:WRONG_VERSION_NUMBER"
	default:
		reason = alertReason(e.Err)
	}
	if reason == "" {
		reason = e.Err.Error()
	}
	return "TLS_error:|" + reason + ":TLS_error_end"
}

// alertReasons are BoringSSL's names of the alerts a server most often
// fails a handshake with, by Go's text of the alert. BoringSSL's code of
// a received alert is 1000 plus the alert's number in the SSL library.
var alertReasons = map[string]struct {
	code int
	name string
}{
	"handshake failure":              {40, "SSLV3_ALERT_HANDSHAKE_FAILURE"},
	"bad certificate":                {42, "SSLV3_ALERT_BAD_CERTIFICATE"},
	"certificate unknown":            {46, "SSLV3_ALERT_CERTIFICATE_UNKNOWN"},
	"unknown certificate authority":  {48, "TLSV1_ALERT_UNKNOWN_CA"},
	"protocol version not supported": {70, "TLSV1_ALERT_PROTOCOL_VERSION"},
	"certificate required":           {116, "TLSV1_CERTIFICATE_REQUIRED"},
	"no application protocol":        {120, "TLSV1_ALERT_NO_APPLICATION_PROTOCOL"},
}

// alertReason renders an alert received from the server, "" for any
// other error.
func alertReason(err error) string {
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "remote error" {
		return ""
	}
	a, ok := alertReasons[strings.TrimPrefix(op.Err.Error(), "tls: ")]
	if !ok {
		return ""
	}
	return fmt.Sprintf("%d:SSL routines:OPENSSL_internal:%s", 268435456+1000+a.code, a.name)
}

// Handshake runs the client side of a TLS handshake on c, counting it in
// st (nil counts nothing). ctx bounds it. fallbackALPN are the protocols
// offered when alpn_protocols is empty (the pool's: "h2" for HTTP/2,
// "http/1.1" for HTTP/1.1, none for TCP). A failure is a *HandshakeError;
// c is then left to the caller to close.
func (cl *Client) Handshake(ctx context.Context, c net.Conn, fallbackALPN []string, st *Stats) (*tls.Conn, error) {
	tc, _, err := cl.HandshakeWith(ctx, c, fallbackALPN, Override{}, st)
	return tc, err
}

// HandshakeWith is Handshake with a request's Override of the server name
// and of the SAN the server's certificate must have. It also returns the
// client certificate sent, nil when the server asked for none (or the
// context has none). The server name is, as Envoy chooses it, the
// Override's, else the host's hostname with auto_host_sni, else sni;
// with auto_sni_san_validation the certificate must be valid for it
// (unless the Override names its own SAN).
func (cl *Client) HandshakeWith(ctx context.Context, c net.Conn, fallbackALPN []string, ov Override, st *Stats) (*tls.Conn, *x509.Certificate, error) {
	cl = cl.current()
	if cl.cfg == nil {
		return nil, nil, &HandshakeError{Err: errSecretsNotReady}
	}
	cfg := cl.cfg
	protos := cl.protocols(fallbackALPN)
	var sent *x509.Certificate
	sni := cfg.ServerName
	switch {
	case ov.ServerName != "":
		sni = ov.ServerName
	case cl.autoHostSNI && ov.HostName != "":
		sni = ov.HostName
	}
	logged := cl.keyLog.wants(c.LocalAddr(), c.RemoteAddr())
	if len(protos) > 0 || sni != cfg.ServerName || ov.VerifySAN != "" || cl.autoSNISAN || cfg.GetClientCertificate != nil || logged {
		cfg = cl.cfg.Clone()
		if len(protos) > 0 {
			cfg.NextProtos = protos
		}
	}
	if logged {
		cfg.KeyLogWriter = cl.keyLog.w
	}
	if get := cfg.GetClientCertificate; get != nil {
		// Called only when the server asks: what the upstream's
		// %UPSTREAM_LOCAL_*% operators show.
		cfg.GetClientCertificate = func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
			cert, err := get(cri)
			if cert != nil {
				sent = cert.Leaf
			}
			return cert, err
		}
	}
	if sni != cfg.ServerName {
		cfg.ServerName = sni
	}
	v := cl.v
	var check chainCheck
	if v.active() {
		check = v.verify
	}
	switch san := ov.VerifySAN; {
	case san != "":
		check = func(chain []*x509.Certificate) error { return v.verifyWith(chain, san) }
		cfg.VerifyConnection = cl.finalCheck(withKeyUsage(v.connectionCheck(check)))
	case cl.autoSNISAN && sni != "":
		check = func(chain []*x509.Certificate) error { return v.verifySNI(chain, sni) }
		cfg.VerifyConnection = cl.finalCheck(withKeyUsage(v.connectionCheck(check)))
	}
	tc, err := runClientHandshake(ctx, c, cfg, st)
	if err != nil {
		return nil, nil, err
	}
	if st != nil {
		v.countUntrusted(check, tc.ConnectionState(), st)
	}
	return tc, sent, nil
}

// runClientHandshake runs a client handshake with cfg, counted in st.
func runClientHandshake(ctx context.Context, c net.Conn, cfg *tls.Config, st *Stats) (*tls.Conn, error) {
	tc := tls.Client(c, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		st.failed(err)
		return nil, &HandshakeError{Err: err}
	}
	st.succeeded(tc.ConnectionState())
	return tc, nil
}

// protocols are the ALPN protocols offered: alpn_protocols, else the
// pool's.
func (cl *Client) protocols(fallback []string) []string {
	if len(cl.alpn) > 0 {
		return slices.Clone(cl.alpn)
	}
	return fallback
}
