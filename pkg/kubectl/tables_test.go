package kubectl

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// now is the tests' clock: 90 s after the dumps' last_updated.
var now = time.Date(2026, 1, 2, 3, 5, 30, 0, time.UTC)

// The sections below are shaped as the proxy's /config_dump writes them,
// with the dynamic (xDS) states the cluster tier's static sidecars never
// have.
const (
	clustersJSON = `{"@type":"type.googleapis.com/envoy.admin.v3.ClustersConfigDump",
 "static_clusters":[{"cluster":{"name":"local","connect_timeout":"1s","load_assignment":{"endpoints":[{"lb_endpoints":[{},{}]}]}},"last_updated":"2026-01-02T03:04:00Z"}],
 "dynamic_active_clusters":[{"version_info":"v7","cluster":{"name":"eds","type":"EDS","lb_policy":"RING_HASH"},"last_updated":"2026-01-02T03:04:00Z"}],
 "dynamic_warming_clusters":[{"version_info":"v8","cluster":{"name":"custom","cluster_type":{"name":"envoy.clusters.aggregate"}},"last_updated":"2026-01-02T03:05:29Z"}]}`
	listenersJSON = `{"@type":"type.googleapis.com/envoy.admin.v3.ListenersConfigDump",
 "static_listeners":[{"listener":{"name":"in","address":{"socket_address":{"address":"0.0.0.0","port_value":15006}},"traffic_direction":"INBOUND",
   "filter_chains":[{"filters":[{"name":"envoy.filters.network.tcp_proxy"}]},{"filters":[{"name":"proxy.filters.network.http_connection_manager"}]}],
   "default_filter_chain":{"filters":[{"name":"envoy.filters.network.tcp_proxy"}]}},"last_updated":"2026-01-02T03:04:00Z"}],
 "dynamic_listeners":[
  {"name":"lds","active_state":{"version_info":"1","listener":{"name":"lds","address":{"pipe":{"path":"/run/x.sock"}}},"last_updated":"2026-01-02T03:04:00Z"},
   "warming_state":{"version_info":"2","listener":{"name":"lds","address":{"socket_address":{"address":"::1","port_value":80}}},"last_updated":"2026-01-02T03:05:00Z"}},
  {"name":"bad","error_state":{"details":"bind failed"}}]}`
	routesJSON = `{"@type":"type.googleapis.com/envoy.admin.v3.RoutesConfigDump",
 "dynamic_route_configs":[{"version_info":"r1","route_config":{"name":"rds","virtual_hosts":[{"name":"vh","domains":["a","b"],"routes":[
  {"match":{"prefix":"/w","headers":[{},{}]},"route":{"weighted_clusters":{"clusters":[{"name":"x","weight":80},{"name":"y","weight":20}]}}},
  {"match":{"safe_regex":{"regex":"^/r$"}},"redirect":{}},
  {"match":{"path":"/h"},"route":{"cluster_header":"x-cluster"}},
  {"match":{"path":"/p"},"route":{"cluster_specifier_plugin":"by-color"}},
  {"match":{"path":"/i"},"route":{"inline_cluster_specifier_plugin":{"extension":{"name":"lua"}}}},
  {"match":{"connect_matcher":{}},"route":{"cluster":"tunnel"}}]}]},"last_updated":"2026-01-02T03:04:00Z"}]}`
	secretsJSON = `{"@type":"type.googleapis.com/envoy.admin.v3.SecretsConfigDump",
 "static_secrets":[{"name":"cert","last_updated":"2026-01-02T03:04:00Z","secret":{"name":"cert","tls_certificate":{}}}],
 "dynamic_active_secrets":[{"name":"ca","version_info":"s1","last_updated":"2026-01-02T03:04:00Z","secret":{"name":"ca","validation_context":{}}}]}`
	clusterStatusJSON = `{"cluster_statuses":[{"name":"web","host_statuses":[
  {"address":{"socket_address":{"address":"10.0.0.1","port_value":8080}},"stats":[{"name":"rq_total","value":"12"},{"name":"cx_active","type":"GAUGE","value":"2"}],"health_status":{"eds_health_status":"HEALTHY"},"weight":1},
  {"address":{"socket_address":{"address":"10.0.0.2","port_value":8080}},"stats":[{"name":"rq_error","value":"3"}],"health_status":{"failed_outlier_check":true,"failed_active_health_check":true},"weight":3,"priority":1},
  {"address":{"socket_address":{"address":"10.0.0.3","port_value":8080}},"health_status":{"eds_health_status":"DRAINING"},"weight":1}]}]}`
)

func TestTables(t *testing.T) {
	cases := map[string]struct {
		table func(*app, []byte) error
		in    string
		want  string
	}{
		"clusters": {clustersTable, clustersJSON, `
NAME     TYPE                       LB POLICY     ENDPOINTS   SOURCE              VERSION   LAST UPDATED
local    STATIC                     ROUND_ROBIN   2           static              -         90s
eds      EDS                        RING_HASH     -           dynamic             v7        90s
custom   envoy.clusters.aggregate   ROUND_ROBIN   -           dynamic (warming)   v8        1s
`},
		"listeners": {listenersTable, listenersJSON, `
NAME   ADDRESS         DIRECTION   CHAINS   FILTERS                             SOURCE    STATE                VERSION   LAST UPDATED
in     0.0.0.0:15006   INBOUND     3        tcp_proxy,http_connection_manager   static    active               -         90s
lds    /run/x.sock     -           0        -                                   dynamic   active               1         90s
lds    [::1]:80        -           0        -                                   dynamic   warming              2         30s
bad    -               -           -        -                                   dynamic   error: bind failed   -         -
`},
		"routes": {routesTable, routesJSON, `
ROUTE CONFIG   VIRTUAL HOST   DOMAINS   MATCH                    ACTION                             SOURCE    VERSION   LAST UPDATED
rds            vh             a,b       prefix /w (+2 headers)   weighted x:80,y:20                 dynamic   r1        90s
rds            vh             a,b       regex ^/r$               redirect                           dynamic   r1        90s
rds            vh             a,b       path /h                  cluster from header x-cluster      dynamic   r1        90s
rds            vh             a,b       path /p                  cluster from plugin by-color       dynamic   r1        90s
rds            vh             a,b       path /i                  cluster from plugin lua (inline)   dynamic   r1        90s
rds            vh             a,b       CONNECT                  cluster tunnel                     dynamic   r1        90s
`},
		"secrets": {secretsTable, secretsJSON, `
NAME   KIND                 SOURCE    VERSION   LAST UPDATED
cert   tls_certificate      static    -         90s
ca     validation_context   dynamic   s1        90s
`},
		"endpoints": {endpointsTable, clusterStatusJSON, `
ENDPOINT        CLUSTER   HEALTH                                                        WEIGHT   PRIORITY   RQ TOTAL   RQ ERROR   CX ACTIVE
10.0.0.1:8080   web       HEALTHY                                                       1        0          12         0          2
10.0.0.2:8080   web       UNHEALTHY (failed_active_health_check,failed_outlier_check)   3        1          0          3          0
10.0.0.3:8080   web       DRAINING                                                      1        0          0          0          0
`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			a := &app{stdout: &out, now: func() time.Time { return now }}
			if err := tc.table(a, []byte(tc.in)); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(strings.TrimPrefix(tc.want, "\n"), out.String()); diff != "" {
				t.Errorf("table (-want +got):\n%s", diff)
			}
		})
	}
}
