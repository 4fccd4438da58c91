package server

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/bootstrap"
	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
	"github.com/outrigger-dev/outrigger/pkg/proxy/xds"
)

// streamSecrets are the secrets one gRPC subscription delivers, as
// Envoy's SdsApi subscribes: every secret with sds_config: {ads: {}}
// shares the ADS stream's Secret subscription (its names growing with
// each secret asked for), while a secret whose sds_config has an
// api_config_source has a stream of its own to the secret discovery
// service. Each secret keeps Envoy's sds.<name>.* stats.
type streamSecrets struct {
	st  *secretStore
	sub *xds.ADSSubscription
	// own is set for a secret's own stream, whose subscription keeps the
	// secret's stats itself.
	own bool

	// mu guards byName, changed by resolve and read by apply.
	mu     sync.Mutex
	byName map[string]*streamSecret
}

// streamSecret is one secret of a streamSecrets.
type streamSecret struct {
	p     *tlsconfig.Provider
	watch *secretWatch
	stats *xds.ResourceStats // nil on its own stream (the subscription's)

	version     string
	lastUpdated time.Time
}

// resolveStream finds or makes the provider of the secret name over the
// gRPC source cs (ads, or an api_config_source). The secret has no value
// until its first response: the contexts using it wait (warm) for it,
// or for its initial_fetch_timeout. The secrets of static clusters are
// resolved before the streams' clusters exist: they subscribe once the
// clusters are built (connect). Errors name the field below the
// SdsSecretConfig.
func (st *secretStore) resolveStream(name string, cs *corev3.ConfigSource) (*tlsconfig.Provider, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	timeout := xds.DefaultInitialFetchTimeout
	if t := cs.GetInitialFetchTimeout(); t != nil {
		timeout = t.AsDuration()
	}
	if cs.GetAds() != nil {
		if st.s.boot.GetDynamicResources().GetAdsConfig() == nil {
			return nil, st.s.noADS("sds_config.ads")
		}
		if st.ads == nil {
			st.ads = &streamSecrets{st: st, byName: map[string]*streamSecret{}}
		}
		return st.ads.want(name, timeout)
	}
	key, err := proto.MarshalOptions{Deterministic: true}.Marshal(cs)
	if err != nil {
		return nil, fmt.Errorf("sds_config: %w", err)
	}
	id := name + "\x00" + string(key)
	if g := st.own[id]; g != nil {
		return g.byName[name].p, nil
	}
	g := &streamSecrets{st: st, own: true, byName: map[string]*streamSecret{}}
	ss := &streamSecret{p: tlsconfig.NewProvider(name, nil)}
	ss.watch = st.watchLocked(ss.p)
	g.byName[name] = ss
	connect := func() error {
		stream, err := st.s.streamFor(cs, secretTypeURL)
		if err != nil {
			return fieldpath.Prefix("sds_config.", err)
		}
		sub, err := stream.Subscribe(xds.SubscriptionOptions{
			TypeURL:             secretTypeURL,
			Stats:               st.s.stats.Scope("sds." + name + "."),
			InitialFetchTimeout: timeout,
			ResourceNames:       []string{name},
		}, g.apply)
		if err != nil {
			return fmt.Errorf("sds_config.api_config_source: %w", err)
		}
		g.mu.Lock()
		g.sub = sub
		g.mu.Unlock()
		// The first response, accepted or not, or the initial fetch
		// timeout ends the wait for the secret, as Envoy's SdsApi init
		// target.
		go func() {
			<-sub.Ready()
			ss.p.MarkReady()
		}()
		return nil
	}
	if !st.connected {
		st.pending = append(st.pending, func() error {
			return fieldpath.Prefix("secret "+name+": ", connect())
		})
	} else if err := connect(); err != nil {
		return nil, err
	}
	if st.own == nil {
		st.own = map[string]*streamSecrets{}
	}
	st.own[id] = g
	return ss.p, nil
}

// connect subscribes the secrets resolved before the clusters existed,
// and those resolved from now on at once.
func (st *secretStore) connect() error {
	if st == nil {
		return nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.connected = true
	var errs []error
	if st.ads != nil {
		st.ads.mu.Lock()
		errs = append(errs, st.ads.subscribeLocked())
		st.ads.mu.Unlock()
	}
	for _, f := range st.pending {
		errs = append(errs, f())
	}
	st.pending = nil
	return errors.Join(errs...)
}

// want adds the secret name to the ADS stream's Secret subscription,
// with its stats and its initial fetch timeout. st.mu is held.
func (g *streamSecrets) want(name string, timeout time.Duration) (*tlsconfig.Provider, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if ss := g.byName[name]; ss != nil {
		return ss.p, nil
	}
	ss := &streamSecret{p: tlsconfig.NewProvider(name, nil), stats: xds.NewResourceStats(g.st.s.stats.Scope("sds." + name + "."))}
	ss.watch = g.st.watchLocked(ss.p)
	g.byName[name] = ss
	if g.st.connected {
		if err := g.subscribeLocked(); err != nil {
			delete(g.byName, name)
			return nil, err
		}
	}
	if timeout > 0 {
		log := g.st.s.logs.Logger("secret")
		time.AfterFunc(timeout, func() {
			select {
			case <-ss.p.Ready():
			default:
				ss.stats.InitFetchTimeout()
				logging.Warning(log, "sds: initial fetch timed out; TLS contexts using the secret fail their handshakes until it comes", "secret", name)
				ss.p.MarkReady()
			}
		})
	}
	return ss.p, nil
}

// subscribeLocked asks the ADS stream for the secrets wanted:
// subscribing on the first call, changing the names later. g.mu is held.
func (g *streamSecrets) subscribeLocked() error {
	names := slices.Sorted(maps.Keys(g.byName))
	if g.sub != nil {
		g.sub.SetResourceNames(names)
		return nil
	}
	if g.st.s.ads == nil {
		return g.st.s.noADS("sds_config.ads")
	}
	// The secrets keep their own stats; the subscription's would only
	// repeat them under a name Envoy does not have.
	sub, err := g.st.s.ads.Subscribe(xds.SubscriptionOptions{
		TypeURL:       secretTypeURL,
		Stats:         stats.NewStore().Scope(""),
		ResourceNames: names,
		OnStreamFailure: func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			for _, ss := range g.byName {
				ss.stats.Failure()
			}
		},
	}, g.apply)
	if err != nil {
		return fmt.Errorf("sds_config.ads: %w", err)
	}
	g.sub = sub
	return nil
}

// apply takes one response: each secret asked for is checked (its
// constraints, the support table) and offered to the contexts using it,
// which compile with it before any of them switches (an unchanged
// secret changes nothing). Over the state of the world a response must
// carry every secret asked for (Envoy: "Missing SDS resources for <name>
// in onConfigUpdate()"). A secret that fails rejects the response (NACK)
// and keeps its last value; as each of Envoy's SDS subscriptions is its
// own, the others of the response apply.
func (g *streamSecrets) apply(u xds.Update) error {
	g.st.s.warnDeprecatedResources(u)
	start := g.st.s.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	type found struct {
		i   int
		sec *tlsv3.Secret
	}
	got := map[string]found{}
	for i, r := range u.Resources {
		sec, ok := r.(*tlsv3.Secret)
		if !ok {
			return fmt.Errorf("resources[%d]: %s is not a secret", i, r.ProtoReflect().Descriptor().FullName())
		}
		if g.byName[sec.GetName()] != nil {
			got[sec.GetName()] = found{i, sec}
		}
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(g.byName)) {
		ss := g.byName[name]
		if len(u.Resources) == 0 && u.ResourceVersions == nil {
			ss.count((*xds.ResourceStats).Empty) // and rejected below, as Envoy's
		}
		f, ok := got[name]
		if !ok {
			if u.ResourceVersions != nil {
				continue // delta: only what changed comes
			}
			ss.count(func(r *xds.ResourceStats) { r.Attempt(); r.Rejected() })
			ss.p.MarkReady() // a rejected first response ends the wait, as Envoy's
			//lint:ignore ST1005 Envoy's message, which control planes may look for
			errs = append(errs, fmt.Errorf("Missing SDS resources for %s in onConfigUpdate()", name))
			continue
		}
		ss.count((*xds.ResourceStats).Attempt)
		if err := g.offer(ss, f.sec); err != nil {
			// Named by the secret rather than its index: a management
			// server may order a response's resources differently each
			// time, and a rejection sent again is logged once.
			ss.count((*xds.ResourceStats).Rejected)
			ss.p.MarkReady()
			errs = append(errs, fmt.Errorf("secret %s: %w", name, err))
			continue
		}
		now := g.st.s.now()
		ss.version, ss.lastUpdated = u.VersionOf(f.i), now
		ss.count(func(r *xds.ResourceStats) { r.Success(ss.version, start, now) })
	}
	return errors.Join(errs...)
}

// offer checks a secret and hands it to its provider unless unchanged.
func (g *streamSecrets) offer(ss *streamSecret, sec *tlsv3.Secret) error {
	if err := bootstrap.ValidateSecret(sec, g.st.s.ext); err != nil {
		return err
	}
	if cur := ss.p.Secret(); cur != nil && proto.Equal(cur, sec) {
		return nil
	}
	return ss.watch.offer(sec, func() error { return ss.p.Update(sec) })
}

// count runs f on the secret's own stats, when it keeps them (on the ADS
// stream; on its own stream the subscription counts).
func (ss *streamSecret) count(f func(*xds.ResourceStats)) {
	if ss.stats != nil {
		f(ss.stats)
	}
}

// dump lists the secrets received, for /config_dump's
// dynamic_active_secrets and dynamic_warming_secrets.
func (g *streamSecrets) dump() (active, warming []*adminv3.SecretsConfigDump_DynamicSecret) {
	if g == nil {
		return nil, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, name := range slices.Sorted(maps.Keys(g.byName)) {
		ss := g.byName[name]
		sec := ss.p.Secret()
		if sec == nil {
			// Envoy shows a secret not received yet as "uninitialized".
			warming = append(warming, &adminv3.SecretsConfigDump_DynamicSecret{Name: name, VersionInfo: "uninitialized"})
			continue
		}
		a, err := anypb.New(sec)
		if err != nil {
			continue
		}
		d := &adminv3.SecretsConfigDump_DynamicSecret{Name: name, VersionInfo: ss.version, Secret: a}
		if !ss.lastUpdated.IsZero() {
			d.LastUpdated = timestamppb.New(ss.lastUpdated.Truncate(time.Millisecond))
		}
		active = append(active, d)
	}
	return active, warming
}
