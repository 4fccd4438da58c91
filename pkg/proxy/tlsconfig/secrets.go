package tlsconfig

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"weak"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"
)

// Provider holds the current value of one secret (a static one, or one a
// file delivers) and recompiles the TLS contexts that use it when it
// changes: new handshakes use the new value, open connections keep the
// one they were made with.
type Provider struct {
	name string
	cur  atomic.Pointer[tlsv3.Secret]
	// ready is closed once the secret has a value, or its source gave up
	// waiting for one (MarkReady): what a listener or cluster using it
	// warms for, as Envoy's SdsApi init target.
	ready     chan struct{}
	readyOnce sync.Once
	// mu serializes updates and guards users.
	mu    sync.Mutex
	users []func(*tlsv3.Secret) (apply func(), err error)
}

// NewProvider is a provider of the secret called name, holding initial
// (nil: none yet).
func NewProvider(name string, initial *tlsv3.Secret) *Provider {
	p := &Provider{name: name, ready: make(chan struct{})}
	if initial != nil {
		p.cur.Store(initial)
		p.MarkReady()
	}
	return p
}

// Ready is closed once the secret has its first value, or MarkReady was
// called.
func (p *Provider) Ready() <-chan struct{} { return p.ready }

// MarkReady ends the wait for a first value (a source whose initial
// fetch timed out or was rejected): the contexts using the secret go on
// without it, their handshakes failing until it comes.
func (p *Provider) MarkReady() { p.readyOnce.Do(func() { close(p.ready) }) }

// Name is the secret's name.
func (p *Provider) Name() string { return p.name }

// Secret is the current value, nil when there is none yet.
func (p *Provider) Secret() *tlsv3.Secret { return p.cur.Load() }

// Update offers a new value: every context using the secret compiles
// with it first, and only when all of them do is it applied to them all.
// Otherwise the first error is returned and everything keeps the old
// value.
func (p *Provider) Update(s *tlsv3.Secret) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.updateLocked(s)
}

// Refresh compiles the contexts using the secret again with its current
// value, because the files it names changed (its watched directory, or
// their parent directories): new handshakes use the new files. As with
// Update, either every context takes them or none does and the error is
// returned. A provider without a value has nothing to refresh.
func (p *Provider) Refresh() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.cur.Load()
	if s == nil {
		return nil
	}
	return p.updateLocked(s)
}

// updateLocked is Update with p.mu held.
func (p *Provider) updateLocked(s *tlsv3.Secret) error {
	applies := make([]func(), 0, len(p.users))
	live := p.users[:0:0]
	for _, u := range p.users {
		apply, err := u(s)
		if errors.Is(err, errContextGone) {
			continue
		}
		if err != nil {
			return err
		}
		applies = append(applies, apply)
		live = append(live, u)
	}
	p.users = live
	p.cur.Store(s)
	for _, a := range applies {
		a()
	}
	p.MarkReady()
	return nil
}

// errContextGone is a user's answer once its context is no longer used
// (a listener that discovery removed): it is dropped.
var errContextGone = errors.New("the TLS context is gone")

// subscribe adds a context that recompiles with each new value.
func (p *Provider) subscribe(u func(*tlsv3.Secret) (func(), error)) {
	p.mu.Lock()
	p.users = append(p.users, u)
	p.mu.Unlock()
}

// SecretResolver finds the provider an SdsSecretConfig names. Errors name
// the field below the SdsSecretConfig.
type SecretResolver func(sc *tlsv3.SdsSecretConfig) (*Provider, error)

// secretRefs are the providers a CommonTlsContext refers to.
type secretRefs struct {
	certs      []*Provider
	validation *Provider
	// combined is set when validation came through
	// combined_validation_context, whose default is merged under it.
	combined *tlsv3.CommonTlsContext_CombinedCertificateValidationContext
	// tickets is a DownstreamTlsContext's
	// session_ticket_keys_sds_secret_config.
	tickets *Provider
}

// resolveRefs resolves the SDS references of ctc. Errors name the field
// below common_tls_context.
func resolveRefs(ctc *tlsv3.CommonTlsContext, resolve SecretResolver) (secretRefs, error) {
	var (
		refs secretRefs
		errs []error
	)
	add := func(path string, sc *tlsv3.SdsSecretConfig) *Provider {
		if resolve == nil {
			errs = append(errs, fmt.Errorf("%s: secrets are not available here", path))
			return nil
		}
		p, err := resolve(sc)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.%w", path, err))
		}
		return p
	}
	for i, sc := range ctc.GetTlsCertificateSdsSecretConfigs() {
		if p := add(fmt.Sprintf("common_tls_context.tls_certificate_sds_secret_configs[%d]", i), sc); p != nil {
			refs.certs = append(refs.certs, p)
		}
	}
	if sc := ctc.GetValidationContextSdsSecretConfig(); sc != nil {
		refs.validation = add("common_tls_context.validation_context_sds_secret_config", sc)
	}
	if cc := ctc.GetCombinedValidationContext(); cc != nil {
		refs.combined = cc
		if cc.GetValidationContextSdsSecretConfig() == nil {
			errs = append(errs, errors.New("common_tls_context.combined_validation_context.validation_context_sds_secret_config: required"))
		} else {
			refs.validation = add("common_tls_context.combined_validation_context.validation_context_sds_secret_config", cc.GetValidationContextSdsSecretConfig())
		}
	}
	return refs, errors.Join(errs...)
}

// any reports whether the context refers to secrets at all.
func (r *secretRefs) any() bool {
	return len(r.certs) > 0 || r.validation != nil || r.combined != nil || r.tickets != nil
}

// providers are the distinct providers referred to.
func (r *secretRefs) providers() []*Provider {
	var out []*Provider
	seen := map[*Provider]bool{}
	for _, p := range append(append([]*Provider(nil), r.certs...), r.validation, r.tickets) {
		if p != nil && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// expand writes the secrets' current values (or override's, for the
// provider being updated) into ctc, a clone: the certificates are
// appended to tls_certificates, the validation context replaces the
// reference (merged over combined_validation_context's default).
func (r *secretRefs) expand(ctc *tlsv3.CommonTlsContext, override *Provider, value *tlsv3.Secret) error {
	get := func(p *Provider) *tlsv3.Secret {
		if p == override {
			return value
		}
		return p.Secret()
	}
	var errs []error
	for i, p := range r.certs {
		tc := get(p).GetTlsCertificate()
		if tc == nil {
			errs = append(errs, fmt.Errorf("common_tls_context.tls_certificate_sds_secret_configs[%d]: secret %q holds no tls_certificate", i, p.name))
			continue
		}
		if tc.GetWatchedDirectory() != nil {
			// The secret's source follows the directory (see
			// server.secretWatch); the compiled context only reads it.
			tc = proto.Clone(tc).(*tlsv3.TlsCertificate)
			tc.WatchedDirectory = nil
		}
		ctc.TlsCertificates = append(ctc.TlsCertificates, tc)
	}
	ctc.TlsCertificateSdsSecretConfigs = nil
	if p := r.validation; p != nil {
		vc := get(p).GetValidationContext()
		if vc == nil {
			errs = append(errs, fmt.Errorf("common_tls_context: validation secret %q holds no validation_context", p.name))
		} else {
			if r.combined != nil || vc.GetWatchedDirectory() != nil {
				merged := proto.Clone(r.combined.GetDefaultValidationContext()).(*tlsv3.CertificateValidationContext)
				if merged == nil {
					merged = &tlsv3.CertificateValidationContext{}
				}
				proto.Merge(merged, vc)
				merged.WatchedDirectory = nil // followed by the secret's source, as above
				vc = merged
			}
			ctc.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: vc}
		}
	}
	return errors.Join(errs...)
}

// CompileServerWithSecrets compiles a DownstreamTlsContext whose
// certificates or validation context may come from secrets (resolve finds
// them; nil refuses every reference). The Server follows the secrets'
// updates. A secret that has no value yet (one a discovery stream
// delivers) leaves the Server without a context until every secret it
// uses has one: its handshakes fail meanwhile, and Ready says when the
// wait is over.
func CompileServerWithSecrets(dc *tlsv3.DownstreamTlsContext, resolve SecretResolver, open KeyLogOpener) (*Server, error) {
	if len(dc.GetCommonTlsContext().GetTlsCertificateSdsSecretConfigs()) > 0 && len(dc.GetCommonTlsContext().GetTlsCertificates()) > 0 {
		return nil, errors.New("common_tls_context: SDS and non-SDS TLS certificates may not be mixed in server contexts")
	}
	srv, ready, err := compileWithSecrets(dc, resolve, func(m *tlsv3.DownstreamTlsContext) **tlsv3.CommonTlsContext { return &m.CommonTlsContext },
		func(m *tlsv3.DownstreamTlsContext) (*Server, error) { return compileServer(m, open) },
		func(s *Server) *atomic.Pointer[Server] { return &s.next }, serverTickets())
	if srv != nil {
		srv.ready = ready
	}
	return srv, err
}

// CompileClientWithSecrets is CompileServerWithSecrets for an
// UpstreamTlsContext.
func CompileClientWithSecrets(uc *tlsv3.UpstreamTlsContext, resolve SecretResolver, open KeyLogOpener) (*Client, error) {
	cl, ready, err := compileWithSecrets(uc, resolve, func(m *tlsv3.UpstreamTlsContext) **tlsv3.CommonTlsContext { return &m.CommonTlsContext },
		func(m *tlsv3.UpstreamTlsContext) (*Client, error) { return compileClient(m, open) },
		func(c *Client) *atomic.Pointer[Client] { return &c.next }, nil)
	if cl != nil {
		cl.ready = ready
	}
	return cl, err
}

// errSecretsNotReady fails the handshakes of a context whose secrets have
// not all arrived (Envoy's "secrets not ready" transport socket).
var errSecretsNotReady = errors.New("TLS context secrets are not ready")

// readyChan is closed once every provider is ready; nil when they all are.
func readyChan(providers []*Provider) <-chan struct{} {
	pending := false
	for _, p := range providers {
		select {
		case <-p.Ready():
		default:
			pending = true
		}
	}
	if !pending {
		return nil
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, p := range providers {
			<-p.Ready()
		}
	}()
	return done
}

// closedChan is a closed channel: what a context that waits for nothing
// reports as ready.
func closedChan() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// compileWithSecrets compiles the TLS context m (with compile) after
// writing its secrets' values into a copy of it, and subscribes the
// result to the secrets: each new value compiles a new context, which
// becomes the result's next. common is m's common_tls_context field.
// While a secret has no value, the result is an empty context (whose
// handshakes fail) that takes its next once they all have one; the
// channel returned is closed once the secrets are ready (nil: at once).
func compileWithSecrets[M proto.Message, T any](m M, resolve SecretResolver, common func(M) **tlsv3.CommonTlsContext,
	compile func(M) (*T, error), next func(*T) *atomic.Pointer[T], tickets *ticketsField[M]) (*T, <-chan struct{}, error) {
	refs, err := resolveRefs(*common(m), resolve)
	if sc := tickets.refOf(m); sc != nil {
		var terr error
		switch {
		case resolve == nil:
			terr = errors.New("session_ticket_keys_sds_secret_config: secrets are not available here")
		default:
			if refs.tickets, terr = resolve(sc); terr != nil {
				terr = fmt.Errorf("session_ticket_keys_sds_secret_config.%w", terr)
			}
		}
		err = errors.Join(err, terr)
	}
	if err != nil {
		return nil, nil, err
	}
	if !refs.any() {
		t, err := compile(m)
		return t, nil, err
	}
	providers := refs.providers()
	missing := func(except *Provider) bool {
		for _, p := range providers {
			if p != except && p.Secret() == nil {
				return true
			}
		}
		return false
	}
	build := func(override *Provider, value *tlsv3.Secret) (*T, error) {
		c := proto.Clone(m).(M)
		ctc := common(c)
		if *ctc == nil {
			*ctc = &tlsv3.CommonTlsContext{}
		}
		if err := refs.expand(*ctc, override, value); err != nil {
			return nil, err
		}
		if refs.tickets != nil {
			sec := refs.tickets.Secret()
			if refs.tickets == override {
				sec = value
			}
			keys := sec.GetSessionTicketKeys()
			if keys == nil {
				return nil, fmt.Errorf("session_ticket_keys_sds_secret_config: secret %q holds no session_ticket_keys", refs.tickets.name)
			}
			tickets.set(c, keys)
		}
		return compile(c)
	}
	var t *T
	if missing(nil) {
		t = new(T) // no context until every secret has come
	} else if t, err = build(nil, nil); err != nil {
		return nil, nil, err
	}
	// The providers hold the context weakly: one nothing uses any more
	// (its listener removed) is collected, and then unsubscribed.
	wt := weak.Make(t)
	for _, p := range providers {
		p.subscribe(func(v *tlsv3.Secret) (func(), error) {
			if wt.Value() == nil {
				return nil, errContextGone
			}
			if missing(p) {
				// Another secret is still to come: nothing to build yet.
				return func() {}, nil
			}
			n, err := build(p, v)
			if err != nil {
				return nil, err
			}
			return func() {
				if cur := wt.Value(); cur != nil {
					next(cur).Store(n)
				}
			}, nil
		})
	}
	return t, readyChan(providers), nil
}

// ticketsField reads and writes a DownstreamTlsContext's session ticket
// keys secret reference, for compileWithSecrets (upstream contexts have
// none).
type ticketsField[M any] struct {
	// ref is the reference, nil without one.
	ref func(M) *tlsv3.SdsSecretConfig
	// set writes the secret's keys in the reference's place.
	set func(M, *tlsv3.TlsSessionTicketKeys)
}

// refOf is f's reference in m, nil without one (or without f).
func (f *ticketsField[M]) refOf(m M) *tlsv3.SdsSecretConfig {
	if f == nil {
		return nil
	}
	return f.ref(m)
}

// serverTickets is the DownstreamTlsContext's
// session_ticket_keys_sds_secret_config: the secret's keys become its
// session_ticket_keys, so rotating the secret rotates the keys new
// handshakes issue and accept tickets with.
func serverTickets() *ticketsField[*tlsv3.DownstreamTlsContext] {
	return &ticketsField[*tlsv3.DownstreamTlsContext]{
		ref: (*tlsv3.DownstreamTlsContext).GetSessionTicketKeysSdsSecretConfig,
		set: func(dc *tlsv3.DownstreamTlsContext, keys *tlsv3.TlsSessionTicketKeys) {
			dc.SessionTicketKeysType = &tlsv3.DownstreamTlsContext_SessionTicketKeys{SessionTicketKeys: keys}
		},
	}
}
