package bootstrap

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	hcmURL    = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
	routerURL = "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"
	fileURL   = "type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog"
)

func TestDefaultExtensionsList(t *testing.T) {
	want := []Extension{
		{Name: "proxy.access_loggers.file", Category: "envoy.access_loggers", TypeURLs: []string{fileURL}},
		{Name: "proxy.filters.http.health_check", Category: "envoy.filters.http", TypeURLs: []string{"type.googleapis.com/envoy.extensions.filters.http.health_check.v3.HealthCheck"}},
		{Name: "proxy.filters.http.router", Category: "envoy.filters.http", TypeURLs: []string{routerURL}},
		{Name: "proxy.filters.network.http_connection_manager", Category: "envoy.filters.network", TypeURLs: []string{hcmURL}},
		{Name: "proxy.resource_monitors.downstream_connections", Category: "envoy.resource_monitors", TypeURLs: []string{connsMonitorURL}},
		{Name: "proxy.resource_monitors.fixed_heap", Category: "envoy.resource_monitors", TypeURLs: []string{heapMonitorURL}},
		{Name: "proxy.stat_sinks.dog_statsd", Category: "envoy.stats_sinks", TypeURLs: []string{"type.googleapis.com/envoy.config.metrics.v3.DogStatsdSink"}},
		{Name: "proxy.stat_sinks.hystrix", Category: "envoy.stats_sinks", TypeURLs: []string{"type.googleapis.com/envoy.config.metrics.v3.HystrixSink"}},
		{Name: "proxy.stat_sinks.statsd", Category: "envoy.stats_sinks", TypeURLs: []string{"type.googleapis.com/envoy.config.metrics.v3.StatsdSink"}},
		{Name: "proxy.upstreams.http.http_protocol_options", Category: "envoy.upstreams.http.http_protocol_options", TypeURLs: []string{"type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions"}},
	}
	if diff := cmp.Diff(want, DefaultExtensions().List()); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
}

func TestDisable(t *testing.T) {
	tests := map[string]struct {
		names        []string
		wantDisabled []string
		wantWarnings []string
		wantErr      string
	}{
		"envoy spelling": {
			names:        []string{"envoy.filters.http/envoy.filters.http.router"},
			wantDisabled: []string{"proxy.filters.http.router"},
		},
		"proxy spelling": {
			names:        []string{"envoy.filters.network/proxy.filters.network.http_connection_manager"},
			wantDisabled: []string{"proxy.filters.network.http_connection_manager"},
		},
		"proxy category spelling": {
			names:        []string{"proxy.access_loggers/proxy.access_loggers.file"},
			wantDisabled: []string{"proxy.access_loggers.file"},
		},
		"several, with blanks and spaces": {
			names:        []string{" envoy.access_loggers/envoy.access_loggers.file", "", "envoy.filters.http/proxy.filters.http.router "},
			wantDisabled: []string{"proxy.access_loggers.file", "proxy.filters.http.router"},
		},
		"unknown name warns": {
			names:        []string{"envoy.filters.http/envoy.filters.http.gzip", "envoy.filters.http/envoy.filters.http.router"},
			wantDisabled: []string{"proxy.filters.http.router"},
			wantWarnings: []string{"failed to disable invalid extension name 'envoy.filters.http/envoy.filters.http.gzip'"},
		},
		"name in the wrong category warns": {
			names:        []string{"envoy.filters.network/envoy.filters.http.router"},
			wantWarnings: []string{"failed to disable invalid extension name 'envoy.filters.network/envoy.filters.http.router'"},
		},
		"malformed item is an error and disables nothing": {
			names:   []string{"envoy.filters.http/envoy.filters.http.router", "envoy.filters.http.router", "/x", "cat/"},
			wantErr: "invalid --disable-extensions item \"envoy.filters.http.router\": expected <category>/<name>\ninvalid --disable-extensions item \"/x\": expected <category>/<name>\ninvalid --disable-extensions item \"cat/\": expected <category>/<name>",
		},
		"nothing": {},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := DefaultExtensions()
			warnings, err := e.Disable(tc.names)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if gotErr != tc.wantErr {
				t.Errorf("error = %q, want %q", gotErr, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantWarnings, warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			var disabled []string
			for _, x := range e.List() {
				if x.Disabled {
					disabled = append(disabled, x.Name)
				}
			}
			if diff := cmp.Diff(tc.wantDisabled, disabled); diff != "" {
				t.Errorf("disabled (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDefaultExtensionsIndependent: each call is a new registry, so
// disabling in one server (or test) does not leak into another.
func TestDefaultExtensionsIndependent(t *testing.T) {
	a := DefaultExtensions()
	if _, err := a.Disable([]string{"envoy.filters.http/envoy.filters.http.router"}); err != nil {
		t.Fatal(err)
	}
	x, ok := DefaultExtensions().Lookup(routerURL)
	if !ok || x.Disabled {
		t.Errorf("a fresh registry has router %+v (found %v), want it enabled", x, ok)
	}
	if x, _ := a.Lookup(routerURL); !x.Disabled {
		t.Errorf("the registry it was disabled in has router %+v, want disabled", x)
	}
}

// TestListReturnsCopies: callers cannot change the registry through List or
// Lookup results.
func TestListReturnsCopies(t *testing.T) {
	e := DefaultExtensions()
	list := e.List()
	list[0].TypeURLs[0] = "changed"
	list[0].Disabled = true
	x, _ := e.Lookup(fileURL)
	x.TypeURLs[0] = "changed too"
	if diff := cmp.Diff(DefaultExtensions().List(), e.List()); diff != "" {
		t.Errorf("registry changed through a returned value (-fresh +after):\n%s", diff)
	}
}

func TestLookup(t *testing.T) {
	tests := map[string]struct {
		typeURL string
		want    string // extension name; empty: not found
	}{
		"canonical url":     {typeURL: hcmURL, want: "proxy.filters.network.http_connection_manager"},
		"other url prefix":  {typeURL: "example.com/x/envoy.extensions.filters.http.router.v3.Router", want: "proxy.filters.http.router"},
		"bare message name": {typeURL: "envoy.extensions.access_loggers.file.v3.FileAccessLog", want: "proxy.access_loggers.file"},
		"unregistered":      {typeURL: "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy"},
		"by name, not type": {typeURL: "envoy.filters.http.router"},
		"empty":             {typeURL: ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			x, ok := DefaultExtensions().Lookup(tc.typeURL)
			if ok != (tc.want != "") || x.Name != tc.want {
				t.Errorf("Lookup(%q) = %q, %v; want %q", tc.typeURL, x.Name, ok, tc.want)
			}
		})
	}
}
