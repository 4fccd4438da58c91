package bootstrap

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDeprecated(t *testing.T) {
	yaml := `
admin:
  access_log_path: /dev/null
  address: {socket_address: {address: 127.0.0.1, port_value: 0}}
static_resources:
  clusters:
  - name: c
    http2_protocol_options: {}
    load_assignment: {cluster_name: c}
  listeners:
  - name: l
    address: {socket_address: {address: 127.0.0.1, port_value: 0}}
    filter_chains:
    - filters:
      - name: hcm
        typed_config:
          "@type": ` + hcmURL + `
          stat_prefix: x
          http2_protocol_options: {stream_error_on_invalid_http_messaging: true}
          route_config: {virtual_hosts: [{name: v, domains: ["*"], routes: [{match: {prefix: /}, direct_response: {status: 200}}]}]}
          http_filters: [` + routerFilter + `]
`
	l, err := Load(LoadOptions{ConfigYAML: yaml})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range Deprecated(l.Bootstrap) {
		got = append(got, fmt.Sprintf("%s %s", f.Path, f.Name))
	}
	want := []string{
		"static_resources.listeners[0].filter_chains[0].filters[0].typed_config.http2_protocol_options.stream_error_on_invalid_http_messaging envoy.config.core.v3.Http2ProtocolOptions.stream_error_on_invalid_http_messaging",
		"static_resources.clusters[0].http2_protocol_options envoy.config.cluster.v3.Cluster.http2_protocol_options",
		"admin.access_log_path envoy.config.bootstrap.v3.Admin.access_log_path",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("deprecated fields (-want +got):\n%s", diff)
	}
}
