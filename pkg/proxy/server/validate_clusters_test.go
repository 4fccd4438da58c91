package server

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/listener"
	"github.com/outrigger-dev/outrigger/pkg/proxy/xds"
)

// routeListener is a listener on 127.0.0.1, port 0, whose only route
// sends / to the given route action (YAML flow); rcExtra is added to its
// route configuration.
func routeListener(name, action, rcExtra string) string {
	return fmt.Sprintf(`
  - name: %s
    address: {socket_address: {address: 127.0.0.1, port_value: 0}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: %s
          route_config:
            %s
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
              - match: {prefix: "/"}
                route: %s
          http_filters:
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}`,
		name, name, rcExtra, action)
}

// knownCluster is a static cluster named known.
const knownCluster = `
  clusters:
  - name: known
    type: STATIC
    load_assignment:
      cluster_name: known
      endpoints:
      - lb_endpoints:
        - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 1}}}`

func TestValidateClustersAtStartup(t *testing.T) {
	const prefix = "static_resources.listeners[0].filter_chains[0].filters[0].typed_config.route_config.virtual_hosts[0].routes[0].route."
	tests := map[string]struct {
		yaml string
		want []string // the errors; none: the server builds
	}{
		"a known cluster": {
			yaml: withListeners(routeListener("l", "{cluster: known}", "")) + knownCluster,
		},
		"an unknown cluster": {
			yaml: withListeners(routeListener("l", "{cluster: nope}", "")) + knownCluster,
			want: []string{prefix + "cluster: unknown cluster 'nope'"},
		},
		"an unknown weighted cluster": {
			yaml: withListeners(routeListener("l", "{weighted_clusters: {clusters: [{name: known, weight: 1}, {name: gone, weight: 1}]}}", "")) + knownCluster,
			want: []string{prefix + "weighted_clusters.clusters[1].name: unknown weighted cluster 'gone'"},
		},
		"validate_clusters: true": {
			yaml: withListeners(routeListener("l", "{cluster: nope}", "validate_clusters: true")),
			want: []string{prefix + "cluster: unknown cluster 'nope'"},
		},
		"validate_clusters: false": {
			yaml: withListeners(routeListener("l", "{cluster: nope}", "validate_clusters: false")),
		},
		// A cluster whose own configuration is wrong is reported once,
		// not again by the routes to it.
		"a broken cluster is not unknown": {
			yaml: withListeners(routeListener("l", "{cluster: known}", "")) + knownCluster + strings.TrimPrefix(knownCluster, "\n  clusters:"),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := buildListenerServer(t, tc.yaml)
			var got []string
			if err != nil {
				for _, e := range listener.PrefixErrors("", err) {
					// The duplicate cluster's own error is not
					// this test's.
					if !strings.Contains(e.Error(), "duplicate cluster name") {
						got = append(got, e.Error())
					}
				}
			} else {
				s.closeListeners()
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestValidateClustersFalseAnswersAtRequestTime checks that a route to a
// missing cluster, accepted with validate_clusters false, answers as
// Envoy's does: 503 (no_cluster), or its cluster_not_found_response_code.
func TestValidateClustersFalseAnswersAtRequestTime(t *testing.T) {
	s := startListenerServer(t, withListeners(
		routeListener("l503", "{cluster: nope}", "validate_clusters: false"),
		routeListener("l404", "{cluster: nope, cluster_not_found_response_code: NOT_FOUND}", "validate_clusters: false"),
	))
	for name, want := range map[string]int{"l503": http.StatusServiceUnavailable, "l404": http.StatusNotFound} {
		code, _, err := fetch(t, listenerAddr(t, s, name), "/")
		if err != nil || code != want {
			t.Errorf("%s: %d %v, want %d", name, code, err, want)
		}
	}
	if n := s.stats.Counter("http.l503.no_cluster").Value(); n != 1 {
		t.Errorf("http.l503.no_cluster = %d, want 1", n)
	}
}

// TestValidateClustersOfDiscoveredListeners checks that a listener from
// discovery with an inline route configuration follows the same rule: a
// route to an unknown cluster refuses the listener, with its field path.
func TestValidateClustersOfDiscoveredListeners(t *testing.T) {
	s := startListenerServer(t, ldsBootstrap(t, hcmListener("static", "s", "")))
	err := s.applyListenerUpdate(xds.Update{VersionInfo: "1", Resources: parseListeners(t,
		routeListener("bad", "{cluster: nope}", ""),
		routeListener("lax", "{cluster: nope}", "validate_clusters: false"),
	)})
	want := "error adding/updating listener(s) bad: filter_chains[0].filters[0].typed_config.route_config.virtual_hosts[0].routes[0].route.cluster: unknown cluster 'nope'"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v\nwant    %s", err, want)
	}
	if got := activeNames(s); !slices.Equal(got, []string{"static", "lax"}) {
		t.Errorf("listeners: %v", got)
	}
}
