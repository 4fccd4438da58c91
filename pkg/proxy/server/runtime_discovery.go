package server

import (
	"errors"
	"fmt"

	runtimev3 "github.com/envoyproxy/go-control-plane/envoy/service/runtime/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/bootstrap"
	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
	"github.com/outrigger-dev/outrigger/pkg/proxy/xds"
)

// runtimeTypeURL is the type of the resources RTDS sends.
const runtimeTypeURL = "type.googleapis.com/envoy.service.runtime.v3.Runtime"

// subscribeRuntime subscribes each rtds_layer of layered_runtime to the
// Runtime resource it names, over its rtds_config (the ADS stream or a
// stream of its own), as Envoy's RtdsSubscription: the layer is empty
// until the resource comes, then holds its layer, replaced by each
// update. The subscription stats are runtime.* (Envoy's scope for
// them). The server waits for every layer's first response (or its
// initial fetch timeout) after the static clusters and before the
// discovered clusters, as Envoy initialises RTDS between the two.
func (s *Server) subscribeRuntime() error {
	if s.runtime == nil {
		return nil
	}
	var (
		errs  []error
		ready []<-chan struct{}
	)
	for i, l := range s.boot.GetLayeredRuntime().GetLayers() {
		rtds := l.GetRtdsLayer()
		if rtds == nil {
			continue
		}
		path := fmt.Sprintf("layered_runtime.layers[%d].rtds_layer.rtds_config.", i)
		if cs := rtds.GetRtdsConfig(); cs.GetAds() == nil && cs.GetApiConfigSource() == nil {
			// Envoy also reads a layer from a file (path_config_source).
			errs = append(errs, &bootstrap.FieldError{Path: path[:len(path)-1], Reason: "not supported by Outrigger other than ads or api_config_source (an RTDS layer from a file is not implemented)"})
			continue
		}
		stream, err := s.streamFor(rtds.GetRtdsConfig(), runtimeTypeURL)
		if err != nil {
			errs = append(errs, fieldpath.Prefix(path, err))
			continue
		}
		timeout := xds.DefaultInitialFetchTimeout
		if t := rtds.GetRtdsConfig().GetInitialFetchTimeout(); t != nil {
			timeout = t.AsDuration()
		}
		layer := runtimeLayer{s: s, index: i, name: rtds.GetName()}
		sub, err := stream.Subscribe(xds.SubscriptionOptions{
			TypeURL:             runtimeTypeURL,
			Stats:               s.stats.Scope("runtime."),
			InitialFetchTimeout: timeout,
			ResourceNames:       []string{rtds.GetName()},
			// Over delta, each update holds the resource while it is
			// held (not only when a response changes it), so an update
			// without it means it was removed.
			WholeSet: true,
		}, layer.apply)
		if err != nil {
			errs = append(errs, &bootstrap.FieldError{Path: path[:len(path)-1], Reason: err.Error()})
			continue
		}
		ready = append(ready, sub.Ready())
	}
	s.rtdsReady = allClosed(ready)
	return errors.Join(errs...)
}

// allClosed is closed once every channel of list is (at once when there
// are none).
func allClosed(list []<-chan struct{}) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, c := range list {
			<-c
		}
	}()
	return done
}

// runtimeLayer is one RTDS layer: the index of its layer in
// layered_runtime and the name of its Runtime resource.
type runtimeLayer struct {
	s     *Server
	index int
	name  string
}

// apply takes one response for the layer. As Envoy's, it must hold
// exactly the one resource asked for ("Unexpected RTDS resource length",
// "Unexpected RTDS runtime (expecting <name>)"), whose layer then
// replaces the values of the runtime layer at once; anything else is
// rejected (NACK) and the values in force stay. Over the incremental
// protocol, a response that only removes the resource empties the
// layer, as Envoy's onConfigRemoved does (the subscription's updates are
// whole sets: a heartbeat still holds it).
func (l runtimeLayer) apply(u xds.Update) error {
	if u.ResourceVersions != nil && len(u.Resources) == 0 {
		return l.set(nil)
	}
	if len(u.Resources) != 1 {
		//lint:ignore ST1005 Envoy's message, which control planes may look for
		return fmt.Errorf("Unexpected RTDS resource length: %d", len(u.Resources))
	}
	rt, ok := u.Resources[0].(*runtimev3.Runtime)
	if !ok {
		return fmt.Errorf("resources[0]: %s is not a runtime", u.Resources[0].ProtoReflect().Descriptor().FullName())
	}
	if rt.GetName() != l.name {
		//lint:ignore ST1005 Envoy's message, which control planes may look for
		return fmt.Errorf("Unexpected RTDS runtime (expecting %s): %s", l.name, rt.GetName())
	}
	return l.set(rt)
}

// set puts the resource's layer in force (nil: an empty layer) and
// updates the runtime gauges.
func (l runtimeLayer) set(rt *runtimev3.Runtime) error {
	if err := l.s.runtime.SetRTDSLayer(l.index, rt.GetLayer()); err != nil {
		return fmt.Errorf("resources[0].%w", err)
	}
	l.s.publishRuntimeStats()
	return nil
}
