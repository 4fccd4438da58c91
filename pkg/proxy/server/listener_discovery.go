package server

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/bootstrap"
	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
	"github.com/outrigger-dev/outrigger/pkg/proxy/listener"
	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
	"github.com/outrigger-dev/outrigger/pkg/proxy/xds"
)

// discoverySource is where discovered listeners come from: a file, or the
// ADS stream. Start begins following it; Close stops it, and no update is
// applied once Close returns.
type discoverySource interface {
	Start() error
	Close() error
}

// newListenerDiscovery sets up listener discovery from the file named by
// dynamic_resources.lds_config. It returns the file subscription, or nil
// when there is none (no lds_config, or the ADS stream: see
// subscribeListenersADS). Nothing is read before Run starts the
// subscription; a file must exist already.
func (s *Server) newListenerDiscovery(dr *bootstrapv3.Bootstrap_DynamicResources) (discoverySource, error) {
	lds := dr.GetLdsConfig()
	if lds == nil {
		return nil, nil
	}
	s.lset.failures = map[string]*adminv3.UpdateFailureState{}
	if api := lds.GetApiConfigSource(); api != nil {
		// Its own stream, made now so that a bad one fails the
		// configuration, started once subscribed.
		c, err := s.newGRPCStream(api, xds.ListenerTypeURL)
		if err != nil {
			return nil, fieldpath.Prefix("dynamic_resources.lds_config.api_config_source.", err)
		}
		s.ldsStream = c
		return nil, nil
	}
	if lds.GetAds() != nil {
		// Subscribed once the clusters are warm (serveListeners), as
		// Envoy starts LDS after its cluster manager's initialisation.
		return nil, nil
	}
	path, field := lds.GetPathConfigSource().GetPath(), "dynamic_resources.lds_config.path_config_source.path"
	if path == "" {
		//lint:ignore SA1019 Envoy still accepts the deprecated ConfigSource.path
		path, field = lds.GetPath(), "dynamic_resources.lds_config.path"
	}
	sub, err := xds.NewFileSubscription(xds.FileOptions{
		Path:             path,
		WatchedDirectory: lds.GetPathConfigSource().GetWatchedDirectory().GetPath(),
		WatchModify:      lds.GetPathConfigSource().GetWatchedDirectory().GetWatchModify(),
		TypeURL:          xds.ListenerTypeURL,
		Stats:            s.stats.Scope("listener_manager.lds."),
		Log:              s.logs.Logger("config"),
		Unknown:          s.unknownDynamicPolicy(),
		UnknownCounter:   s.stats.Counter("server.dynamic_unknown_fields"),
		Now:              s.now,
	}, s.applyListenerUpdate)
	var dirErr *xds.WatchedDirectoryError
	if errors.As(err, &dirErr) {
		field = "dynamic_resources.lds_config.path_config_source.watched_directory.path"
	}
	if err != nil {
		return nil, &bootstrap.FieldError{Path: field, Reason: err.Error()}
	}
	return sub, nil
}

// unknownDynamicPolicy is the unknown-field policy of dynamic resources
// that --reject-unknown-dynamic-fields and --ignore-unknown-dynamic-fields
// choose.
func (s *Server) unknownDynamicPolicy() xds.UnknownPolicy {
	switch {
	case s.opts.RejectUnknownDynamicFields:
		return xds.UnknownReject
	case s.opts.IgnoreUnknownDynamicFields:
		return xds.UnknownIgnore
	}
	return xds.UnknownWarn
}

// subscribeListenersADS subscribes the listeners to the stream
// lds_config names: the ADS stream, or its own stream to an
// api_config_source's service. The server waits for the first response
// (or the initial fetch timeout) before it is LIVE.
func (s *Server) subscribeListenersADS() error {
	lds := s.boot.GetDynamicResources().GetLdsConfig()
	if lds.GetAds() == nil && lds.GetApiConfigSource() == nil {
		return nil
	}
	var stream *xds.ADS
	if s.ldsStream != nil {
		stream = s.ldsStream.ADS
	} else {
		var err error
		if stream, err = s.streamFor(lds, xds.ListenerTypeURL); err != nil {
			return fieldpath.Prefix("dynamic_resources.lds_config.", err)
		}
	}
	timeout := xds.DefaultInitialFetchTimeout
	if t := lds.GetInitialFetchTimeout(); t != nil {
		timeout = t.AsDuration()
	}
	sub, err := stream.Subscribe(xds.SubscriptionOptions{
		TypeURL:             xds.ListenerTypeURL,
		Stats:               s.stats.Scope("listener_manager.lds."),
		InitialFetchTimeout: timeout,
	}, s.applyListenerUpdate)
	if err != nil {
		return &bootstrap.FieldError{Path: "dynamic_resources.lds_config", Reason: err.Error()}
	}
	s.ldsReady = sub.Ready()
	if s.ldsStream != nil {
		// Its own stream opens now, with the subscription on it.
		return s.streams.add(s.ldsStream)
	}
	return nil
}

// applyListenerUpdate applies one listener discovery update, the whole
// set of listeners discovery wants, as Envoy's LDS does:
//
//   - listeners from discovery that the update no longer names are removed
//     (retired: they stop accepting and their connections drain);
//   - a new name adds a listener; a changed listener replaces the old one,
//     taking its sockets over where the address is unchanged, while the
//     old one drains its connections; an unchanged one is left alone;
//   - a static listener cannot be changed by discovery, and while
//     /drain_listeners has stopped a traffic direction, listeners in that
//     direction are neither added nor updated: those are skipped, with a
//     warning, and the rest of the update applies;
//   - a listener that fails (validation, a clashing address, a bind) is
//     reported in /config_dump's error_state, and the update as a whole is
//     then rejected, after the others were applied.
//
// It runs on the subscription's goroutine, one update at a time.
func (s *Server) applyListenerUpdate(u xds.Update) error {
	s.warnDeprecatedResources(u)
	var lcs []*listenerv3.Listener
	names := map[string]bool{}
	for i, r := range u.Resources {
		lc, ok := r.(*listenerv3.Listener)
		if !ok {
			return fmt.Errorf("resources[%d]: %s is not a listener", i, r.ProtoReflect().Descriptor().FullName())
		}
		switch name := lc.GetName(); {
		case name == "":
			return fmt.Errorf("resources[%d].name: a listener from discovery needs a name", i)
		case names[name]:
			return fmt.Errorf("duplicate listener %s found", name)
		default:
			names[name] = true
		}
		lcs = append(lcs, lc)
	}
	now := s.now()
	log := s.logs.Logger("upstream")

	s.lset.mu.Lock()
	defer s.lset.mu.Unlock()
	if s.lset.closed {
		return errors.New("the server is shutting down")
	}
	s.lset.version = u.VersionInfo
	clear(s.lset.failures)
	// Removals first, so that a listener taking over a removed one's
	// address finds it free.
	kept := make([]*builtListener, 0, len(s.lset.active))
	for _, bl := range s.lset.active {
		if bl.dynamic && !names[bl.Name()] {
			log.Info("lds: remove listener", "listener", bl.Name())
			s.lset.stats.ListenerRemoved.Inc()
			s.retireLocked(bl)
			continue
		}
		kept = append(kept, bl)
	}
	s.lset.active = kept

	var failed []string
	for i, lc := range lcs {
		// Over delta xDS each listener has its own version.
		if err := s.addOrUpdateLocked(lc, u.VersionOf(i), now); err != nil {
			details := strings.ReplaceAll(err.Error(), "\n", "; ")
			failed = append(failed, lc.GetName()+": "+details)
			s.lset.failures[lc.GetName()] = &adminv3.UpdateFailureState{
				FailedConfiguration: pack(lc),
				LastUpdateAttempt:   timestamppb.New(now.Truncate(time.Millisecond)),
				Details:             details,
				VersionInfo:         u.VersionOf(i),
			}
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("error adding/updating listener(s) %s", strings.Join(failed, ", "))
	}
	return nil
}

// addOrUpdateLocked adds one listener from discovery, or replaces the one
// of that name. Skipped listeners (unchanged, static, or in a stopped
// direction) are not errors. s.lset.mu is held.
func (s *Server) addOrUpdateLocked(lc *listenerv3.Listener, version string, now time.Time) error {
	log := s.logs.Logger("upstream")
	name := lc.GetName()
	i := slices.IndexFunc(s.lset.active, func(bl *builtListener) bool { return bl.Name() == name })
	var old *builtListener
	if i >= 0 {
		old = s.lset.active[i]
		switch {
		case !old.dynamic:
			logging.Warning(log, "lds: a static listener cannot be updated by discovery; skipped", "listener", name)
			return nil
		case proto.Equal(old.config, lc):
			return nil
		}
	}
	if s.lset.stopped.covers(lc.GetTrafficDirection()) {
		logging.Warning(log, "lds: listener not added or updated: /drain_listeners stopped the listeners of its traffic direction",
			"listener", name, "direction", lc.GetTrafficDirection().String())
		return nil
	}
	if err := bootstrap.ValidateListener(lc, s.ext); err != nil {
		return err
	}
	if err := s.checkAddressesLocked(lc); err != nil {
		return err
	}
	bl, err := s.buildListener(lc, s.lset.stats, old)
	if err != nil {
		return err
	}
	bl.dynamic, bl.version, bl.lastUpdated = true, version, now
	bl.SetSocketSource(s.inheritedSockets) // a hot-restart parent's, while one drains
	if old != nil {
		err = bl.BindFrom(old.Listener)
	} else {
		err = bl.Bind()
	}
	if err != nil {
		bl.discard()
		return err
	}
	s.serve(bl)
	s.drainForTerminationLocked(bl)
	s.lset.stats.TotalListenersActive.Inc()
	if old == nil {
		log.Info("lds: add listener", "listener", name)
		s.lset.stats.ListenerAdded.Inc()
		s.lset.active = append(s.lset.active, bl)
		return nil
	}
	log.Info("lds: update listener", "listener", name)
	s.lset.stats.ListenerModified.Inc()
	s.lset.active[i] = bl
	s.retireLocked(old)
	return nil
}

// checkAddressesLocked refuses a listener whose address (a fixed port) is
// one another listener in service is bound to: with SO_REUSEPORT on both
// sockets the kernel would silently share the connections between them.
// s.lset.mu is held.
func (s *Server) checkAddressesLocked(lc *listenerv3.Listener) error {
	taken := map[string]string{}
	for _, bl := range s.lset.active {
		if bl.Name() == lc.GetName() || bl.Stopped() {
			continue
		}
		for _, a := range bl.Addresses() {
			taken[listener.AddressKey(a.GetSocketAddress(), bl.IsUDP())] = bl.Name()
		}
	}
	udp := lc.GetAddress().GetSocketAddress().GetProtocol() == corev3.SocketAddress_UDP
	addrs := []*corev3.SocketAddress{lc.GetAddress().GetSocketAddress()}
	for _, aa := range lc.GetAdditionalAddresses() {
		addrs = append(addrs, aa.GetAddress().GetSocketAddress())
	}
	for _, a := range addrs {
		if other, ok := taken[listener.AddressKey(a, udp)]; ok {
			return fmt.Errorf("error adding listener: '%s' has duplicate address '%s' as existing listener '%s'", lc.GetName(), listener.AddressString(a), other)
		}
	}
	return nil
}
