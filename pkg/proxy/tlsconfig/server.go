package tlsconfig

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
)

// sessionTicketKeyLen is the size of an Envoy session ticket key file:
// a 16-byte name, a 32-byte HMAC secret and a 32-byte AES key.
const sessionTicketKeyLen = 80

// Server is a compiled DownstreamTlsContext: what a listener's filter
// chain needs to run the server side of TLS handshakes.
type Server struct {
	cfg *tls.Config
	// noALPN is cfg without ALPN, for clients that offer none of
	// alpn_protocols: Envoy then goes on without ALPN where Go would
	// fail the handshake.
	noALPN *tls.Config
	alpn   []string
	v      *validator
	// picks holds, per connection in its handshake, the certificate
	// selectCertificate picked and what it did about OCSP, which
	// Handshake reports and counts.
	picks sync.Map // net.Conn -> certPick
	// ocsp and must are, per certificate, its OCSP response to staple
	// (nil for none) and whether it must be stapled (the TLS Feature
	// extension); policy is ocsp_staple_policy; now is the clock that
	// expires responses.
	ocsp   []*ocspStaple
	must   []bool
	policy tlsv3.DownstreamTlsContext_OcspStaplePolicy
	now    func() time.Time
	// keyLog is key_log; logged and loggedNoALPN are cfg and noALPN
	// writing to it, for the connections it wants.
	keyLog               *keyLog
	logged, loggedNoALPN *tls.Config
	// served are the certificates, which selectCertificate picks from:
	// cfg has none, or Go would serve the first itself to a hello
	// without a server name.
	served []tls.Certificate
	// fullScan is full_scan_certs_on_sni_mismatch: a server name no
	// certificate covers picks by key type as a hello without one does,
	// rather than taking the first certificate.
	fullScan bool
	// preferClient is prefer_client_ciphers: a TLS 1.2 handshake gets
	// the client's most preferred usable suite (see clientPreferredSuite).
	preferClient bool
	// requireSNI is require_sni: a hello without a server name, or with
	// one no certificate covers, fails (see configFor).
	requireSNI bool
	// perCert are the certificates' own tls_params, by index (nil: none
	// has any); chosen pins, per connection in its handshake, the
	// certificate configFor picked them for, so that selectCertificate,
	// asked under the certificate's parameters, serves the same one.
	perCert []*certParams
	chosen  sync.Map // net.Conn -> int
	// certs are what /certs shows of the context.
	certs contextCerts
	// next is the context compiled from its secrets' latest values, nil
	// until one changes; handshakes use it from then on.
	next atomic.Pointer[Server]
	// ready is closed once its secrets have come (nil: they had).
	ready <-chan struct{}
}

// Ready is closed once the secrets the context uses have their first
// values, or their sources gave up waiting: what its listener or cluster
// warms for.
func (s *Server) Ready() <-chan struct{} {
	if s.ready == nil {
		return closedChan()
	}
	return s.ready
}

// current is the context new handshakes use.
func (s *Server) current() *Server {
	if n := s.next.Load(); n != nil {
		return n
	}
	return s
}

// CompileServer compiles a DownstreamTlsContext. Errors name the field
// path below it, one per problem (joined). A key_log is refused: it needs
// CompileServerWithSecrets's opener.
func CompileServer(dc *tlsv3.DownstreamTlsContext) (*Server, error) {
	return compileServer(dc, nil)
}

// compileServer is CompileServer opening key logs with open.
func compileServer(dc *tlsv3.DownstreamTlsContext, open KeyLogOpener) (*Server, error) {
	var errs []error
	ctc := dc.GetCommonTlsContext()
	cfg := &tls.Config{}
	if err := applyParams(cfg, ctc.GetTlsParams(), tls.VersionTLS13); err != nil {
		errs = append(errs, fieldpath.Split(fieldpath.Prefix("common_tls_context.tls_params.", err))...)
	}
	sigAlgs, err := signatureSchemes(ctc.GetTlsParams().GetSignatureAlgorithms())
	if err != nil {
		errs = append(errs, fieldpath.Split(fieldpath.Prefix("common_tls_context.tls_params.", err))...)
	}
	fips, err := applyCompliance(cfg, ctc.GetTlsParams())
	if err != nil {
		errs = append(errs, err)
	}
	if fips {
		sigAlgs = fipsSignatures
	}
	var (
		certs   contextCerts
		staples []*ocspStaple
		must    []bool
		served  []tls.Certificate
		// perCert are the certificates' own tls_params (nil: none has
		// any); ownSigAlgs: one of them sets signature_algorithms.
		perCert    []*certParams
		ownSigAlgs bool
	)
	tlsCerts := ctc.GetTlsCertificates()
	if len(tlsCerts) == 0 {
		errs = append(errs, errors.New("common_tls_context.tls_certificates: No TLS certificates found for server context"))
	}
	for i, tc := range tlsCerts {
		c, err := loadCertificate(tc)
		if err != nil {
			errs = append(errs, fieldpath.Split(fieldpath.Prefix(fmt.Sprintf("common_tls_context.tls_certificates[%d].", i), err))...)
			continue
		}
		var staple *ocspStaple
		if ds := tc.GetOcspStaple(); ds != nil {
			if staple, err = loadOCSPStaple(ds, c.Leaf); err != nil {
				errs = append(errs, fieldpath.Split(fieldpath.Prefix(fmt.Sprintf("common_tls_context.tls_certificates[%d].", i), err))...)
			}
		} else if dc.GetOcspStaplePolicy() == tlsv3.DownstreamTlsContext_MUST_STAPLE {
			errs = append(errs, fmt.Errorf("common_tls_context.tls_certificates[%d].ocsp_staple: Required OCSP response is missing from TLS context (ocsp_staple_policy MUST_STAPLE)", i))
		}
		// Our signatures use only signature_algorithms (nil: Go's).
		c.SupportedSignatureAlgorithms = sigAlgs
		if own := tc.GetTlsParams(); own != nil {
			cp, algs, err := compileCertParams(ctc.GetTlsParams(), own, fips)
			if err != nil {
				errs = append(errs, fieldpath.Split(fieldpath.Prefix(certParamsPath(i), err))...)
			}
			if perCert == nil {
				perCert = make([]*certParams, len(tlsCerts))
			}
			perCert[i], c.SupportedSignatureAlgorithms = cp, algs
			ownSigAlgs = ownSigAlgs || len(own.GetSignatureAlgorithms()) > 0
		}
		served = append(served, c)
		staples, must = append(staples, staple), append(must, mustStaple(c.Leaf))
		certs.chain = append(certs.chain, loadedCert{path: certificatePath(tc), cert: c.Leaf, ocsp: staple})
	}
	v := &validator{}
	if vc := ctc.GetValidationContext(); vc != nil {
		var err error
		if v, err = compileValidation(vc); err != nil {
			errs = append(errs, fieldpath.Split(fieldpath.Prefix("common_tls_context.validation_context.", err))...)
		}
	}
	// The SPIFFE validator always asks BoringSSL to fail a client
	// without a certificate (SSL_VERIFY_FAIL_IF_NO_PEER_CERT).
	v.require = dc.GetRequireClientCertificate().GetValue() || v.spiffe != nil
	if (len(ctc.GetTlsParams().GetSignatureAlgorithms()) > 0 || ownSigAlgs) && v.active() {
		errs = append(errs, fieldpath.Prefix("common_tls_context.tls_params.", errPeerSignatures("with client certificates (a validation context or require_client_certificate)")))
	}
	kl, err := compileKeyLog(ctc.GetKeyLog(), open)
	if err != nil {
		errs = append(errs, fieldpath.Split(fieldpath.Prefix("common_tls_context.", err))...)
	}
	if err := applySessionResumption(cfg, dc); err != nil {
		errs = append(errs, err)
	}
	if t := dc.GetSessionTimeout(); t != nil && !cfg.SessionTicketsDisabled {
		applySessionTimeout(cfg, t.AsDuration(), time.Now)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	certs.ca = v.firstCA
	s := &Server{cfg: cfg, served: served, alpn: ctc.GetAlpnProtocols(), v: v, certs: certs,
		ocsp: staples, must: must, policy: dc.GetOcspStaplePolicy(), now: time.Now,
		fullScan: dc.GetFullScanCertsOnSniMismatch().GetValue(), preferClient: dc.GetPreferClientCiphers(),
		requireSNI: dc.GetRequireSni().GetValue(), perCert: perCert}
	if v.active() {
		// A required certificate that is missing fails in Go's own
		// handshake, which sends certificate_required (TLS 1.3) as
		// BoringSSL does; the rest is verify's.
		cfg.ClientAuth = tls.RequestClientCert
		if v.require {
			cfg.ClientAuth = tls.RequireAnyClientCert
		}
		switch {
		case v.suppressCAList, v.systemRoots:
		case v.spiffe != nil:
			cfg.ClientCAs = v.spiffe.names // every trust domain's CAs
		default:
			cfg.ClientCAs = v.roots // only names the acceptable CAs; verify checks
		}
		cfg.VerifyConnection = v.connectionCheck(v.verify)
	}
	if fips {
		cfg.VerifyConnection = withFIPS202205(cfg.VerifyConnection)
	}
	cfg.GetCertificate = s.selectCertificate
	s.noALPN = cfg.Clone()
	if len(s.alpn) > 0 {
		cfg.NextProtos = slices.Clone(s.alpn)
	}
	if kl != nil {
		s.keyLog = kl
		s.logged, s.loggedNoALPN = cfg.Clone(), s.noALPN.Clone()
		s.logged.KeyLogWriter, s.loggedNoALPN.KeyLogWriter = kl.w, kl.w
	}
	if len(s.alpn) > 0 || kl != nil || s.preferClient || s.requireSNI || perCert != nil {
		cfg.GetConfigForClient = s.configFor
	}
	return s, nil
}

// applySessionResumption sets up session tickets: on by default (Go
// rotates its own keys), off with disable_stateless_session_resumption,
// or with the keys of session_ticket_keys (the first one issues tickets,
// all of them are accepted), which may come from a secret
// (session_ticket_keys_sds_secret_config, see CompileServerWithSecrets). Go's keys are 32 bytes: each Envoy key file
// is hashed into one, so proxies sharing the files share resumption.
func applySessionResumption(cfg *tls.Config, dc *tlsv3.DownstreamTlsContext) error {
	if dc.GetSessionTicketKeysSdsSecretConfig() != nil {
		// CompileServerWithSecrets writes the secret's keys in its place.
		return errors.New("session_ticket_keys_sds_secret_config: secrets are not available here")
	}
	if dc.GetDisableStatelessSessionResumption() {
		cfg.SessionTicketsDisabled = true
		return nil
	}
	keys := dc.GetSessionTicketKeys().GetKeys()
	if len(keys) == 0 {
		return nil
	}
	var (
		out  [][32]byte
		errs []error
	)
	for i, ds := range keys {
		b, from, err := readSource(ds)
		if err != nil {
			errs = append(errs, fmt.Errorf("session_ticket_keys.keys[%d].%w", i, err))
			continue
		}
		if len(b) != sessionTicketKeyLen {
			errs = append(errs, fmt.Errorf("session_ticket_keys.keys[%d]: %s: Incorrect TLS session ticket key length. Length %d, expected length %d", i, from, len(b), sessionTicketKeyLen))
			continue
		}
		out = append(out, sha256.Sum256(b))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	cfg.SetSessionTicketKeys(out)
	return nil
}

// configFor drops ALPN for a client that offers none of alpn_protocols,
// as Envoy's selection then declines ALPN rather than the handshake,
// logs the keys of the connections key_log wants, with
// prefer_client_ciphers allows only the suite the client prefers, and
// with require_sni refuses a hello without a server name a certificate
// covers.
//
// A certificate with its own tls_params gets them: the certificate is
// picked here, as selectCertificate would, and pinned for it.
func (s *Server) configFor(hello *tls.ClientHelloInfo) (*tls.Config, error) {
	// Here rather than in selectCertificate, which a resumed session
	// skips.
	if s.requireSNI && !s.coversName(hello.ServerName) {
		s.picks.Store(hello.Conn, certPick{noSNIMatch: true})
		return nil, errNoSNIMatch
	}
	cfg := s.variantFor(hello)
	if !s.preferClient && s.perCert == nil {
		return cfg, nil
	}
	base := cfg
	if base == nil {
		base = s.cfg
	}
	i := 0
	if len(s.served) > 1 {
		i = s.certificateIndex(hello)
	}
	// Clones keep base's session ticket keys: Go uses the original
	// config's keys for a returned config without keys of its own.
	var out *tls.Config
	if s.perCert != nil {
		if hello.Conn != nil {
			s.chosen.Store(hello.Conn, i)
		}
		if p := s.perCert[i]; p != nil {
			out = base.Clone()
			p.apply(out)
			base = out
		}
	}
	if s.preferClient {
		if suite := clientPreferredSuite(hello, base, &s.served[i]); suite != 0 {
			if out == nil {
				out = base.Clone()
			}
			out.CipherSuites = []uint16{suite}
		}
	}
	if out == nil {
		return cfg, nil
	}
	return out, nil
}

// variantFor is the config for hello among cfg's variants without ALPN
// or with key logging, nil for cfg itself.
func (s *Server) variantFor(hello *tls.ClientHelloInfo) *tls.Config {
	noALPN := len(s.alpn) > 0 && len(hello.SupportedProtos) > 0
	for _, p := range hello.SupportedProtos {
		if slices.Contains(s.alpn, p) {
			noALPN = false
			break
		}
	}
	logged := hello.Conn != nil && s.keyLog.wants(hello.Conn.LocalAddr(), hello.Conn.RemoteAddr())
	switch {
	case logged && noALPN:
		return s.loggedNoALPN
	case logged:
		return s.logged
	case noALPN:
		return s.noALPN
	}
	return nil
}

// pinned is the certificate configFor picked for the connection's
// handshake, when certificates have their own tls_params.
func (s *Server) pinned(c net.Conn) (int, bool) {
	if s.perCert == nil {
		return 0, false
	}
	v, ok := s.chosen.LoadAndDelete(c)
	if !ok {
		return 0, false
	}
	return v.(int), true
}

// certPick is the certificate a handshake served and its OCSP action.
type certPick struct {
	cert *tls.Certificate
	ocsp ocspAction
	// noSNIMatch: require_sni refused the hello (cert is nil).
	noSNIMatch bool
}

// selectCertificate serves a handshake its certificate (see
// certificateIndex), with its OCSP response stapled when the client asks
// for one and ocsp_staple_policy says so; a certificate that must be
// stapled without a valid response fails the handshake.
func (s *Server) selectCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	i := 0
	if pinned, ok := s.pinned(hello.Conn); ok {
		i = pinned
	} else if len(s.served) > 1 {
		i = s.certificateIndex(hello)
	}
	cert := &s.served[i]
	action := ocspNotAsked
	if slices.Contains(hello.Extensions, extStatusRequest) {
		action = stapleDecision(s.policy, s.ocsp[i], s.must[i], s.now())
	}
	if i != 0 || action != ocspNotAsked {
		s.picks.Store(hello.Conn, certPick{cert: cert, ocsp: action})
	}
	if action == ocspFailed {
		return nil, errOCSPStapleRequired
	}
	return withStaple(cert, s.ocsp[i], action), nil
}

// certificateIndex picks among several certificates as Envoy's default
// selector does. With a server name: the first certificate whose names
// cover it that the client supports, else the first whose names cover
// it. When none covers it, the first certificate, unless
// full_scan_certs_on_sni_mismatch asks for the scan a hello without a
// server name gets: the first certificate the client supports, else the
// first one.
func (s *Server) certificateIndex(hello *tls.ClientHelloInfo) int {
	if hello.ServerName != "" {
		named := -1
		for i := range s.served {
			c := &s.served[i]
			if c.Leaf.VerifyHostname(hello.ServerName) != nil {
				continue
			}
			if hello.SupportsCertificate(c) == nil {
				return i
			}
			if named < 0 {
				named = i
			}
		}
		if named >= 0 {
			return named
		}
		if !s.fullScan {
			return 0
		}
	}
	// Go's check of a certificate also wants the server name covered:
	// the scan asks about the key alone.
	anyName := *hello
	anyName.ServerName = ""
	for i := range s.served {
		if anyName.SupportsCertificate(&s.served[i]) == nil {
			return i
		}
	}
	return 0
}

// Handshake runs the server side of a TLS handshake on c, counting it in
// st (nil counts nothing). ctx bounds it. It returns the TLS connection
// and the certificate it served (for %DOWNSTREAM_LOCAL_*%).
func (s *Server) Handshake(ctx context.Context, c net.Conn, st *Stats) (*tls.Conn, *x509.Certificate, error) {
	tc, hs, err := s.HandshakeState(ctx, c, st)
	return tc, hs.Local, err
}

// Handshaked is what a completed server handshake tells besides its
// connection.
type Handshaked struct {
	// Local is the certificate served (for %DOWNSTREAM_LOCAL_*%).
	Local *x509.Certificate
	// PeerValidated is Envoy's peerCertificateValidated: the client sent
	// a certificate that the validation context checked (trusted_ca,
	// SAN matchers or pins) and every check passed; one that
	// ACCEPT_UNTRUSTED let through failing is not validated.
	PeerValidated bool
}

// HandshakeState is Handshake, telling the handshake's Handshaked.
func (s *Server) HandshakeState(ctx context.Context, c net.Conn, st *Stats) (*tls.Conn, Handshaked, error) {
	s = s.current()
	if s.cfg == nil {
		return nil, Handshaked{}, errSecretsNotReady
	}
	tc := tls.Server(c, s.cfg)
	err := tc.HandshakeContext(ctx)
	if s.perCert != nil {
		// A handshake that failed before asking for its certificate
		// leaves its pin.
		s.chosen.Delete(c)
	}
	local := s.served[0].Leaf
	if v, ok := s.picks.LoadAndDelete(c); ok {
		p := v.(certPick)
		if p.noSNIMatch {
			st.noSNIMatch()
		} else {
			local = p.cert.Leaf
			st.ocsp(p.ocsp)
		}
	}
	if err != nil {
		st.failed(err)
		return nil, Handshaked{}, err
	}
	cs := tc.ConnectionState()
	st.succeeded(cs)
	untrusted := s.v.countUntrusted(s.v.verify, cs, st)
	return tc, Handshaked{Local: local, PeerValidated: len(cs.PeerCertificates) > 0 && s.v.checks() && !untrusted}, nil
}
