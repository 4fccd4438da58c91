package server

import (
	"errors"
	"fmt"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	filev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpconn"
	"github.com/outrigger-dev/outrigger/pkg/proxy/listener"
	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// builtListener is a configured listener with the network filter serving it.
type builtListener struct {
	*listener.Listener
	hcm *httpconn.Manager
}

// buildListeners turns static listeners into unbound listeners. The
// bootstrap was validated already (supported fields, one
// http_connection_manager per chain); errors here are the ones only building
// reveals, with their configuration path.
func buildListeners(cfgs []*listenerv3.Listener, logs *logging.Registry, st *stats.Store) ([]*builtListener, error) {
	var out []*builtListener
	var errs []error
	for i, lc := range cfgs {
		path := fmt.Sprintf("static_resources.listeners[%d]", i)
		bl, err := buildListener(lc, logs, st)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.%w", path, err))
			continue
		}
		out = append(out, bl)
	}
	if err := errors.Join(errs...); err != nil {
		for _, bl := range out {
			_ = bl.hcm.Close()
		}
		return nil, err
	}
	return out, nil
}

func buildListener(lc *listenerv3.Listener, logs *logging.Registry, st *stats.Store) (*builtListener, error) {
	sa := lc.GetAddress().GetSocketAddress()
	if sa == nil {
		return nil, errors.New("address: a socket_address is required")
	}
	chains := lc.GetFilterChains()
	if len(chains) != 1 || len(chains[0].GetFilters()) != 1 {
		return nil, errors.New("filter_chains: exactly one filter chain with one filter is supported by Outrigger for now")
	}
	filter := chains[0].GetFilters()[0]
	var hcm hcmv3.HttpConnectionManager
	if err := filter.GetTypedConfig().UnmarshalTo(&hcm); err != nil {
		return nil, fmt.Errorf("filter_chains[0].filters[0].typed_config: %w", err)
	}
	mgr, err := httpconn.New(&hcm, httpconn.Deps{Log: logs.Logger("http"), Stats: st})
	if err != nil {
		return nil, fmt.Errorf("filter_chains[0].filters[0].typed_config.%w", err)
	}
	l := listener.New(listener.Config{
		Name:      lc.GetName(),
		Address:   listener.AddressString(sa),
		Direction: lc.GetTrafficDirection(),
		Handler:   mgr,
		Log:       logs.Logger("conn_handler"),
	})
	return &builtListener{Listener: l, hcm: mgr}, nil
}

// fileAccessLogPath returns the file of a file access logger; other access
// logger kinds were refused by validation already.
func fileAccessLogPath(al *accesslogv3.AccessLog) (string, error) {
	var file filev3.FileAccessLog
	if err := al.GetTypedConfig().UnmarshalTo(&file); err != nil {
		return "", fmt.Errorf("typed_config: %w", err)
	}
	if file.GetPath() == "" {
		return "", errors.New("typed_config.path: must be set")
	}
	return file.GetPath(), nil
}
