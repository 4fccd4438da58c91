package server

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/bootstrap"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
	"github.com/outrigger-dev/outrigger/pkg/proxy/xds"
)

// secretTypeURL is the type of SDS resources.
const secretTypeURL = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"

// secretStore holds the secrets TLS contexts name: static_resources.secrets
// by name, and secrets read from files (sds_config with
// path_config_source), one file subscription per file and name, shared by
// every context naming it.
type secretStore struct {
	s      *Server
	static map[string]*tlsconfig.Provider

	mu    sync.Mutex
	files []*fileSecret
	// watches follow the files of the secrets from files and streams.
	watches []*secretWatch
	// ads are the secrets over the ADS stream, nil before the first;
	// own the secrets on streams of their own, by name and config source
	// (secrets_stream.go).
	ads *streamSecrets
	own map[string]*streamSecrets
	// connected is set once the clusters exist, so that streams can be
	// opened; pending are the subscriptions waiting for it.
	connected bool
	pending   []func() error
}

// fileSecret is one secret followed in a DiscoveryResponse file.
type fileSecret struct {
	path, dir string
	p         *tlsconfig.Provider
	sub       *xds.FileSubscription
	watch     *secretWatch
	// files is the digest of the files the current secret names: a read
	// of an unchanged SDS file whose named files changed recompiles.
	files [sha256.Size]byte
	// validate checks a secret read from the file as the bootstrap's are
	// checked: a field Outrigger does not implement (private_key_provider)
	// rejects the read.
	validate func(*tlsv3.Secret) error
}

// newSecretStore indexes the static secrets. Errors name their path.
func (s *Server) newSecretStore(secrets []*tlsv3.Secret) (*secretStore, error) {
	st := &secretStore{s: s, static: map[string]*tlsconfig.Provider{}}
	var errs []error
	for i, sec := range secrets {
		path := fmt.Sprintf("static_resources.secrets[%d]", i)
		switch {
		case sec.GetName() == "":
			errs = append(errs, &bootstrap.FieldError{Path: path + ".name", Reason: "required"})
		case st.static[sec.GetName()] != nil:
			errs = append(errs, &bootstrap.FieldError{Path: path + ".name", Reason: fmt.Sprintf("Duplicate static TlsCertificate secret name %s", sec.GetName())})
		case sec.GetTlsCertificate().GetWatchedDirectory() != nil:
			errs = append(errs, &bootstrap.FieldError{Path: path + ".tls_certificate.watched_directory", Reason: tlsconfig.WatchedOutsideSDS})
		case sec.GetValidationContext().GetWatchedDirectory() != nil:
			errs = append(errs, &bootstrap.FieldError{Path: path + ".validation_context.watched_directory", Reason: tlsconfig.WatchedOutsideSDS})
		default:
			st.static[sec.GetName()] = tlsconfig.NewProvider(sec.GetName(), sec)
		}
	}
	return st, errors.Join(errs...)
}

// resolve finds the provider an SdsSecretConfig names: a static secret
// without sds_config, else the secret of the file its path_config_source
// names, read now (a file that cannot be read or lacks the secret is a
// configuration error) and followed from then on. Errors name the field
// below the SdsSecretConfig.
func (st *secretStore) resolve(sc *tlsv3.SdsSecretConfig) (*tlsconfig.Provider, error) {
	name := sc.GetName()
	if name == "" {
		return nil, errors.New("name: required")
	}
	cs := sc.GetSdsConfig()
	if cs == nil {
		if p := st.static[name]; p != nil {
			return p, nil
		}
		return nil, fmt.Errorf("name: Unknown static secret: %s", name)
	}
	if cs.GetAds() != nil || cs.GetApiConfigSource() != nil {
		return st.resolveStream(name, cs)
	}
	path, dir := cs.GetPathConfigSource().GetPath(), cs.GetPathConfigSource().GetWatchedDirectory().GetPath()
	//lint:ignore SA1019 the deprecated path still names the file, as in Envoy
	if old := cs.GetPath(); path == "" && old != "" {
		path = old
	}
	if path == "" {
		return nil, errors.New("sds_config: path_config_source, ads or api_config_source is required")
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, fs := range st.files {
		if fs.path == path && fs.dir == dir && fs.p.Name() == name {
			return fs.p, nil
		}
	}
	fs := &fileSecret{path: path, dir: dir, p: tlsconfig.NewProvider(name, nil),
		validate: func(sec *tlsv3.Secret) error { return bootstrap.ValidateSecret(sec, st.s.ext) }}
	fs.watch = st.watchLocked(fs.p)
	sub, err := xds.NewFileSubscription(xds.FileOptions{
		Path:             path,
		WatchedDirectory: dir,
		WatchModify:      cs.GetPathConfigSource().GetWatchedDirectory().GetWatchModify(),
		TypeURL:          secretTypeURL,
		Stats:            st.s.stats.Scope("sds." + name + "."),
		Log:              st.s.logs.Logger("secret"),
		Now:              st.s.now,
	}, func(u xds.Update) error {
		st.s.warnDeprecatedResources(u)
		return fs.apply(u)
	})
	if err != nil {
		return nil, fmt.Errorf("sds_config.path_config_source.path: %w", err)
	}
	fs.sub = sub
	if err := sub.Start(); err != nil {
		return nil, fmt.Errorf("sds_config.path_config_source: %w", err)
	}
	st.files = append(st.files, fs)
	if fs.p.Secret() == nil {
		return nil, fmt.Errorf("sds_config.path_config_source.path: secret %q could not be read from %s (the log says why)", name, path)
	}
	return fs.p, nil
}

// apply takes a new read of the file: the named secret, offered to the
// contexts using it; any of them failing with it rejects the update.
func (fs *fileSecret) apply(u xds.Update) error {
	for _, r := range u.Resources {
		sec, ok := r.(*tlsv3.Secret)
		if !ok || sec.GetName() != fs.p.Name() {
			continue
		}
		if err := fs.validate(sec); err != nil {
			return err
		}
		files := filesDigest(sec)
		if fs.p.Secret() != nil && proto.Equal(sec, fs.p.Secret()) && files == fs.files {
			return nil
		}
		// The first read goes in as it is: the contexts compile with it
		// next.
		if err := fs.watch.offer(sec, func() error { return fs.p.Update(sec) }); err != nil {
			return err
		}
		fs.files = files
		return nil
	}
	return fmt.Errorf("secret %q is not in the file", fs.p.Name())
}

// close stops following the files.
func (st *secretStore) close() {
	if st == nil {
		return
	}
	st.mu.Lock()
	files, watches := st.files, st.watches
	st.mu.Unlock()
	for _, fs := range files {
		_ = fs.sub.Close()
	}
	for _, w := range watches {
		w.close()
	}
}

// watchLocked makes the watch of the files of p, a secret from a file or
// a stream, closed with the store. st.mu is held.
func (st *secretStore) watchLocked(p *tlsconfig.Provider) *secretWatch {
	w := newSecretWatch(p, st.s.stats.Scope("sds."+p.Name()+"."), st.s.logs.Logger("secret"))
	st.watches = append(st.watches, w)
	return w
}

// dynamicDump lists the secrets from files and discovery streams as
// /config_dump's dynamic_active_secrets, and the secrets still awaited
// from streams as its dynamic_warming_secrets.
func (st *secretStore) dynamicDump() (out, warming []*adminv3.SecretsConfigDump_DynamicSecret) {
	if st == nil {
		return nil, nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	groups := []*streamSecrets{st.ads}
	for _, id := range slices.Sorted(maps.Keys(st.own)) {
		groups = append(groups, st.own[id])
	}
	for _, g := range groups {
		a, w := g.dump()
		out, warming = append(out, a...), append(warming, w...)
	}
	for _, fs := range st.files {
		sec := fs.p.Secret()
		if sec == nil {
			continue
		}
		a, err := anypb.New(sec)
		if err != nil {
			continue
		}
		d := &adminv3.SecretsConfigDump_DynamicSecret{Name: sec.GetName(), VersionInfo: fs.sub.Version(), Secret: a}
		if t := fs.sub.LastUpdated(); !t.IsZero() {
			d.LastUpdated = timestamppb.New(t.Truncate(time.Millisecond))
		}
		out = append(out, d)
	}
	return out, warming
}
