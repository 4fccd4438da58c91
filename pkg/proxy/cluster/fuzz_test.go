package cluster

import (
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// FuzzNewManager feeds arbitrary cluster configurations (protojson, not
// validated first) to the manager: it must refuse them with errors or
// build clusters that pick hosts, never panic.
func FuzzNewManager(f *testing.F) {
	for _, seed := range []string{
		`{"name":"a"}`,
		`{"name":"a","type":"STRICT_DNS","lb_policy":"MAGLEV"}`,
		`{"name":"a","type":"STRICT_DNS","dns_failure_refresh_rate":{"base_interval":"1s","max_interval":"0.5s"},"dns_jitter":"-1s","load_assignment":{"cluster_name":"a","endpoints":[{"lb_endpoints":[{"endpoint":{"address":{"socket_address":{"address":"a.b","port_value":80}}}}]}]}}`,
		`{"name":"a","type":"LOGICAL_DNS","dns_resolvers":[{"socket_address":{"address":"x","port_value":99999}}],"typed_dns_resolver_config":{"name":"envoy.network.dns_resolver.cares"}}`,
		`{"name":"a","connect_timeout":"-3s","common_lb_config":{"healthy_panic_threshold":{"value":"NaN"}}}`,
		`{"name":"a","load_assignment":{"cluster_name":"a","policy":{"overprovisioning_factor":0},"endpoints":[{"priority":3,"load_balancing_weight":0,"lb_endpoints":[{"endpoint":{"address":{"socket_address":{"address":"::1","port_value":80}}},"load_balancing_weight":7,"health_status":"DEGRADED","metadata":{"filter_metadata":{"envoy.lb":{"canary":true}}}}]}]}}`,
		`{"name":"a","circuit_breakers":{"thresholds":[{"priority":"HIGH","max_connections":1},{"priority":7}]}}`,
		`{"name":"a","http2_protocol_options":{},"typed_extension_protocol_options":{"envoy.extensions.upstreams.http.v3.HttpProtocolOptions":{"@type":"type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions","explicit_http_config":{"http2_protocol_options":{}},"common_http_protocol_options":{"idle_timeout":"1s","max_requests_per_connection":1}}}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var c clusterv3.Cluster
		if err := protojson.Unmarshal(data, &c); err != nil {
			return
		}
		if _, err := NewManager([]*clusterv3.Cluster{&c, &c}, Options{Stats: stats.NewStore()}); err == nil {
			t.Fatal("two clusters of the same name were accepted")
		}
		m, err := NewManager([]*clusterv3.Cluster{&c}, Options{Stats: stats.NewStore()})
		if err != nil {
			configErrors(t, err)
			return
		}
		defer m.Close()
		for _, cl := range m.Clusters() {
			for range 3 {
				if h := cl.PickHost(nil); h != nil && h.Weight < MinWeight {
					t.Fatalf("picked host %s has weight %d", h.Address, h.Weight)
				}
			}
		}
	})
}
