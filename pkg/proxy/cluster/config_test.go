package cluster

import (
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/google/go-cmp/cmp"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

func TestNewManagerErrors(t *testing.T) {
	tests := map[string]struct {
		yaml string
		want []string
	}{
		"endpoint weight above 100": {
			yaml: `
- name: web
  load_assignment:
    cluster_name: web
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 80}}}
        load_balancing_weight: 101`,
			want: []string{"static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints[0].load_balancing_weight: 101 is out of range: a weight is 1 to 100"},
		},
		"endpoint weight 0": {
			yaml: `
- name: web
  load_assignment:
    cluster_name: web
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 80}}}
      - endpoint: {address: {socket_address: {address: 127.0.0.2, port_value: 80}}}
        load_balancing_weight: 0`,
			want: []string{"static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints[1].load_balancing_weight: 0 is out of range: a weight is 1 to 100"},
		},
		"locality weight above 100": {
			yaml: `
- name: web
  load_assignment:
    cluster_name: web
    endpoints:
    - load_balancing_weight: 1000
      lb_endpoints:
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 80}}}`,
			want: []string{"static_resources.clusters[0].load_assignment.endpoints[0].load_balancing_weight: 1000 is out of range: a weight is 1 to 100"},
		},
		"host name instead of an IP": {
			yaml: `
- name: web
  load_assignment:
    cluster_name: web
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: backend.local, port_value: 80}}}`,
			want: []string{`static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address.address: "backend.local" is not an IP address (a STATIC cluster's endpoints are IPv4 or IPv6 literals)`},
		},
		"port 0": {
			yaml: `
- name: web
  load_assignment:
    cluster_name: web
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: "::1"}}}`,
			want: []string{"static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address.port_value: 0 is not a port (1 to 65535)"},
		},
		"endpoint without address": {
			yaml: `
- name: web
  load_assignment:
    cluster_name: web
    endpoints:
    - lb_endpoints:
      - endpoint: {hostname: a}
      - health_status: HEALTHY`,
			want: []string{
				"static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address: required",
				"static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints[1].endpoint: required",
			},
		},
		"canary that is not a boolean": {
			yaml: `
- name: web
  load_assignment:
    cluster_name: web
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 80}}}
        metadata: {filter_metadata: {envoy.lb: {canary: "true"}}}`,
			want: []string{`static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints[0].metadata.filter_metadata["envoy.lb"].canary: must be a boolean`},
		},
		"priority above 128": {
			yaml: `
- name: web
  load_assignment:
    cluster_name: web
    endpoints:
    - priority: 4000000000
      lb_endpoints:
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 80}}}`,
			want: []string{"static_resources.clusters[0].load_assignment.endpoints[0].priority: 4000000000 is above the lowest priority 128"},
		},
		"load balancer settings out of range": {
			yaml: `
- name: lr
  lb_policy: LEAST_REQUEST
  least_request_lb_config: {choice_count: 1}
- name: ring
  lb_policy: RING_HASH
  ring_hash_lb_config: {minimum_ring_size: 2048, maximum_ring_size: 1024}
- name: maglev
  lb_policy: MAGLEV
  maglev_lb_config: {table_size: 65536}
- name: provided
  lb_policy: CLUSTER_PROVIDED
- name: typed
  load_balancing_policy: {policies: [{typed_extension_config: {name: x, typed_config: {"@type": type.googleapis.com/google.protobuf.Empty}}}]}`,
			want: []string{
				"static_resources.clusters[0].least_request_lb_config.choice_count: 1 is below 2 (least request compares at least two hosts)",
				"static_resources.clusters[1].ring_hash_lb_config.minimum_ring_size: minimum_ring_size (2048) > maximum_ring_size (1024)",
				"static_resources.clusters[2].maglev_lb_config.table_size: The table size of maglev must be prime number (65536 is not)",
				"static_resources.clusters[3].lb_policy: CLUSTER_PROVIDED is only valid for a cluster type that provides its load balancer (ORIGINAL_DST); STATIC does not",
				"static_resources.clusters[4].load_balancing_policy.policies: didn't find a registered load balancer factory implementation for cluster: 'typed' with names from [x] (Outrigger has envoy.load_balancing_policies.round_robin, least_request, random, ring_hash and maglev)",
			},
		},
		"EDS cluster with a load assignment": {
			yaml: `
- name: eds
  type: EDS
  load_assignment: {cluster_name: eds}`,
			want: []string{"static_resources.clusters[0].load_assignment: an EDS cluster's endpoints come from eds_cluster_config; remove load_assignment"},
		},
		"duplicate and missing names": {
			yaml: `
- name: a
- name: b
- name: a
- {}`,
			want: []string{
				`static_resources.clusters[2].name: duplicate cluster name "a" (also static_resources.clusters[0])`,
				"static_resources.clusters[3].name: required",
			},
		},
		"negative connect timeout": {
			yaml: `
- name: a
  connect_timeout: -1s`,
			want: []string{"static_resources.clusters[0].connect_timeout: must be a positive duration"},
		},
		"circuit breakers twice for one priority": {
			yaml: `
- name: a
  circuit_breakers:
    thresholds:
    - {max_connections: 1}
    - {priority: HIGH}
    - {priority: DEFAULT, max_retries: 1}`,
			want: []string{"static_resources.clusters[0].circuit_breakers.thresholds[2].priority: DEFAULT is already set by thresholds[0]"},
		},
		"panic threshold out of range": {
			yaml: `
- name: a
  common_lb_config: {healthy_panic_threshold: {value: 150}}`,
			want: []string{"static_resources.clusters[0].common_lb_config.healthy_panic_threshold.value: 150 is not a percentage (0 to 100)"},
		},
		"overprovisioning factor 0": {
			yaml: `
- name: a
  load_assignment: {cluster_name: a, policy: {overprovisioning_factor: 0}}`,
			want: []string{"static_resources.clusters[0].load_assignment.policy.overprovisioning_factor: must be above 0"},
		},
		"two drop_overloads categories": {
			yaml: `
- name: a
  load_assignment: {cluster_name: a, policy: {drop_overloads: [{category: x, drop_percentage: {numerator: 1}}, {category: "y", drop_percentage: {numerator: 2}}]}}`,
			want: []string{"static_resources.clusters[0].load_assignment.policy.drop_overloads: Cluster drop_overloads config has 2 categories. Envoy only support one."},
		},
		"drop_overloads above 100%": {
			yaml: `
- name: a
  load_assignment: {cluster_name: a, policy: {drop_overloads: [{category: x, drop_percentage: {numerator: 101}}]}}`,
			want: []string{"static_resources.clusters[0].load_assignment.policy.drop_overloads[0].drop_percentage: Cluster drop_overloads config is invalid. drop_ratio=1.01(Numerator 101 / Denominator 100). The valid range is 0~1."},
		},
		"unknown protocol options": {
			yaml: `
- name: a
  typed_extension_protocol_options:
    envoy.extensions.upstreams.tcp.v3.TcpProtocolOptions:
      "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
      explicit_http_config: {http2_protocol_options: {}}`,
			want: []string{`static_resources.clusters[0].typed_extension_protocol_options["envoy.extensions.upstreams.tcp.v3.TcpProtocolOptions"]: unknown protocol options "envoy.extensions.upstreams.tcp.v3.TcpProtocolOptions" (supported: envoy.extensions.upstreams.http.v3.HttpProtocolOptions)`},
		},
		"protocol options of the wrong type": {
			yaml: `
- name: a
  typed_extension_protocol_options:
    envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
      "@type": type.googleapis.com/envoy.config.cluster.v3.Cluster
      name: x`,
			want: []string{`static_resources.clusters[0].typed_extension_protocol_options["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]: has type envoy.config.cluster.v3.Cluster, expected envoy.extensions.upstreams.http.v3.HttpProtocolOptions`},
		},
		"protocol options without explicit config": {
			yaml: `
- name: a
  typed_extension_protocol_options:
    envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
      "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
      common_http_protocol_options: {idle_timeout: 1s}`,
			want: []string{`static_resources.clusters[0].typed_extension_protocol_options["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]: explicit_http_config, use_downstream_protocol_config or auto_config is required`},
		},
		"client-only protocol options": {
			yaml: `
- name: a
  typed_extension_protocol_options:
    envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
      "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
      common_http_protocol_options: {max_headers_count: 50}
      explicit_http_config: {http2_protocol_options: {max_concurrent_streams: 10, initial_stream_window_size: 65536}}`,
			want: []string{
				`static_resources.clusters[0].typed_extension_protocol_options["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"].common_http_protocol_options.max_headers_count: not supported by Outrigger on a cluster (it applies to client connections only)`,
			},
		},
		"max_requests_per_connection twice": {
			yaml: `
- name: a
  max_requests_per_connection: 5
  typed_extension_protocol_options:
    envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
      "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
      common_http_protocol_options: {max_requests_per_connection: 3}
      explicit_http_config: {http_protocol_options: {}}`,
			want: []string{
				"static_resources.clusters[0].max_requests_per_connection: cannot be combined with common_http_protocol_options.max_requests_per_connection; set it there",
			},
		},
		"max_connection_duration on a cluster": {
			yaml: `
- name: a
  typed_extension_protocol_options:
    envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
      "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
      common_http_protocol_options: {max_connection_duration: 60s}
      explicit_http_config: {http_protocol_options: {}}`,
			want: []string{
				`static_resources.clusters[0].typed_extension_protocol_options["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"].common_http_protocol_options.max_connection_duration: not supported by Outrigger on a cluster (it applies to client connections only)`,
			},
		},
		"negative max_stream_duration": {
			yaml: `
- name: a
  typed_extension_protocol_options:
    envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
      "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
      common_http_protocol_options: {max_stream_duration: -1s}
      explicit_http_config: {http_protocol_options: {}}`,
			want: []string{
				`static_resources.clusters[0].typed_extension_protocol_options["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"].common_http_protocol_options.max_stream_duration: must be a valid, non-negative duration`,
			},
		},
		"stream errors in the cluster's own HTTP/2 options": {
			yaml: `
- name: a
  http2_protocol_options: {max_outbound_frames: 100, max_consecutive_inbound_frames_with_empty_payload: 2, override_stream_error_on_invalid_http_message: true}`,
			want: []string{
				"static_resources.clusters[0].http2_protocol_options.override_stream_error_on_invalid_http_message: not supported by Outrigger on a cluster (it applies to client connections only)",
			},
		},
		"client-only HPACK and SETTINGS options": {
			yaml: `
- name: a
  http2_protocol_options:
    hpack_table_size: 0
    enable_huffman_encoding: false
    max_header_field_size_kb: 8
    custom_settings_parameters: [{identifier: 9, value: 1}]
    disallow_obs_text: true`,
			want: []string{
				"static_resources.clusters[0].http2_protocol_options.custom_settings_parameters: not supported by Outrigger on a cluster (it applies to client connections only)",
				"static_resources.clusters[0].http2_protocol_options.disallow_obs_text: not supported by Outrigger on a cluster (it applies to client connections only)",
				"static_resources.clusters[0].http2_protocol_options.enable_huffman_encoding: not supported by Outrigger on a cluster (it applies to client connections only)",
				"static_resources.clusters[0].http2_protocol_options.max_header_field_size_kb: not supported by Outrigger on a cluster (it applies to client connections only)",
				"static_resources.clusters[0].http2_protocol_options.hpack_table_size: not supported by Outrigger on a cluster outside 1 to 4194303",
			},
		},
		"client-only HTTP/1 options": {
			yaml: `
- name: a
  typed_extension_protocol_options:
    envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
      "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
      explicit_http_config: {http_protocol_options: {accept_http_10: true}}`,
			want: []string{
				`static_resources.clusters[0].typed_extension_protocol_options["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"].explicit_http_config.http_protocol_options.accept_http_10: not supported by Outrigger on a cluster (it applies to client connections only)`,
			},
		},
		"both HTTP/2 settings": {
			yaml: `
- name: a
  http2_protocol_options: {}
  typed_extension_protocol_options:
    envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
      "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
      explicit_http_config: {http2_protocol_options: {}}`,
			want: []string{`static_resources.clusters[0].http2_protocol_options: cannot be combined with typed_extension_protocol_options["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]; set the protocol there`},
		},
		"deprecated HTTP/1.1 option for clients only": {
			yaml: `[{name: a, http_protocol_options: {accept_http_10: true}}]`,
			want: []string{"static_resources.clusters[0].http_protocol_options.accept_http_10: not supported by Outrigger on a cluster (it applies to client connections only)"},
		},
		"deprecated HTTP/1.1 and HTTP/2 options without protocol_selection": {
			yaml: `[{name: a, http_protocol_options: {}, http2_protocol_options: {}}]`,
			want: []string{"static_resources.clusters[0].http_protocol_options: cannot be combined with http2_protocol_options unless protocol_selection is USE_DOWNSTREAM_PROTOCOL (Envoy: both HTTP1 and HTTP2 options may only be configured with non-default 'protocol_selection' values)"},
		},
		"deprecated common options beside the extension": {
			yaml: `
- name: a
  common_http_protocol_options: {idle_timeout: 5s}
  typed_extension_protocol_options:
    envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
      "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
      explicit_http_config: {http_protocol_options: {}}`,
			want: []string{`static_resources.clusters[0].common_http_protocol_options: cannot be combined with typed_extension_protocol_options["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]; set the protocol there`},
		},
		"deprecated HTTP/2 options with a request limit": {
			yaml: `[{name: a, http2_protocol_options: {}, common_http_protocol_options: {max_requests_per_connection: 3}}]`,
			want: []string{"static_resources.clusters[0].common_http_protocol_options.max_requests_per_connection: " + errH2MaxRequests},
		},
		"every problem of one endpoint": {
			yaml: `
- name: web
  load_assignment:
    cluster_name: web
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: backend.local, port_value: 80}}}
        load_balancing_weight: 101
        metadata: {filter_metadata: {envoy.lb: {canary: 1}}}`,
			want: []string{
				`static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address.address: "backend.local" is not an IP address (a STATIC cluster's endpoints are IPv4 or IPv6 literals)`,
				"static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints[0].load_balancing_weight: 101 is out of range: a weight is 1 to 100",
				`static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints[0].metadata.filter_metadata["envoy.lb"].canary: must be a boolean`,
			},
		},
		"every problem of every cluster": {
			yaml: `
- name: a
  type: LOGICAL_DNS
- name: b
  load_assignment:
    cluster_name: b
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: 10.0.0.1, port_value: 70000}}}
        load_balancing_weight: 200`,
			want: []string{
				"static_resources.clusters[0].load_assignment: LOGICAL_DNS clusters must have a single host",
				"static_resources.clusters[1].load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address.port_value: 70000 is not a port (1 to 65535)",
				"static_resources.clusters[1].load_assignment.endpoints[0].lb_endpoints[0].load_balancing_weight: 200 is out of range: a weight is 1 to 100",
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m, err := NewManager(parseClusters(t, tc.yaml), Options{Stats: stats.NewStore()})
			if m != nil {
				t.Errorf("NewManager returned a manager with errors")
			}
			if diff := cmp.Diff(tc.want, errorLines(err)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if err != nil {
				configErrors(t, err)
			}
		})
	}
}

// hostView is what a test compares of a host.
type hostView struct {
	Address, Hostname string
	Locality          upstream.Locality
	Priority, Weight  uint32
	Canary            bool
	Health            corev3.HealthStatus
}

func TestStaticClusterHosts(t *testing.T) {
	m, _, _ := newTestManager(t, `
- name: web
  alt_stat_name: web_stats
  connect_timeout: 0.25s
  per_connection_buffer_limit_bytes: 8192
  circuit_breakers:
    thresholds:
    - {priority: HIGH, max_connections: 10, max_retries: 7}
    - {max_pending_requests: 5}
  load_assignment:
    cluster_name: web
    endpoints:
    - priority: 1
      locality: {region: eu, zone: eu-1, sub_zone: rack-2}
      lb_endpoints:
      - endpoint: {address: {socket_address: {address: "::1", port_value: 8443}}}
        health_status: DRAINING
    - locality: {zone: eu-2}
      lb_endpoints:
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 8080}}, hostname: a.local}
        load_balancing_weight: 100
        metadata: {filter_metadata: {envoy.lb: {canary: true}, other: {x: 1}}}
      - endpoint: {address: {socket_address: {address: 127.0.0.2, port_value: 8080}}}
        health_status: DEGRADED
      - endpoint: {address: {socket_address: {address: 127.0.0.3, port_value: 8080}}}
        health_status: TIMEOUT
- name: empty
`)
	web := m.Cluster("web")
	if web == nil {
		t.Fatal("cluster web not found")
	}
	var got []hostView
	for _, h := range web.Hosts() {
		if h.Cluster != "web" {
			t.Errorf("host %s: Cluster = %q, want web", h.Address, h.Cluster)
		}
		got = append(got, hostView{h.Address, h.Hostname, h.Locality, h.Priority, h.Weight, h.Canary, h.ConfigHealth})
	}
	want := []hostView{
		{Address: "127.0.0.1:8080", Hostname: "a.local", Locality: upstream.Locality{Zone: "eu-2"}, Weight: 100, Canary: true},
		{Address: "127.0.0.2:8080", Locality: upstream.Locality{Zone: "eu-2"}, Weight: 1, Health: corev3.HealthStatus_DEGRADED},
		{Address: "127.0.0.3:8080", Locality: upstream.Locality{Zone: "eu-2"}, Weight: 1, Health: corev3.HealthStatus_TIMEOUT},
		{Address: "[::1]:8443", Locality: upstream.Locality{Region: "eu", Zone: "eu-1", SubZone: "rack-2"}, Priority: 1, Weight: 1, Health: corev3.HealthStatus_DRAINING},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("hosts (-want +got):\n%s", diff)
	}

	checks := []struct {
		name      string
		got, want any
	}{
		{"name", web.Name(), "web"},
		{"observability name", web.ObservabilityName(), "web_stats"},
		{"added via API", web.AddedViaAPI(), false},
		{"HTTP/2", web.HTTP2(), false},
		{"connect timeout", web.settings.connectTimeout, 250 * time.Millisecond},
		{"read buffer", web.settings.readBufferSize(), 8192},
		{"default thresholds", web.Thresholds(corev3.RoutingPriority_DEFAULT), Thresholds{MaxConnections: 1024, MaxPendingRequests: 5, MaxRequests: 1024, MaxRetries: 3}},
		{"high thresholds", web.Thresholds(corev3.RoutingPriority_HIGH), Thresholds{MaxConnections: 10, MaxPendingRequests: 1024, MaxRequests: 1024, MaxRetries: 7}},
		{"canary", web.IsCanary("127.0.0.1:8080"), true},
		{"not canary", web.IsCanary("127.0.0.2:8080"), false},
		{"empty cluster has no hosts", len(m.Cluster("empty").Hosts()), 0},
		{"empty cluster defaults", m.Cluster("empty").settings.connectTimeout, 5 * time.Second},
		{"unknown cluster", m.Cluster("nope") == nil, true},
		{"clusters in order", []string{m.Clusters()[0].Name(), m.Clusters()[1].Name()}, []string{"web", "empty"}},
	}
	for _, c := range checks {
		if diff := cmp.Diff(c.want, c.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}

func TestProtocolSettings(t *testing.T) {
	// Envoy's default HTTP/2 flood limits.
	limits := h2Limits{maxEmptyFrames: 1, maxPriorityPerStream: 100, maxWindowUpdatePerData: 10}
	tests := map[string]struct {
		yaml string
		want protocolSettings
	}{
		"defaults": {
			yaml: `[{name: a}]`,
			want: protocolSettings{idleTimeout: time.Hour, h2: limits},
		},
		"cluster-level HTTP/2": {
			yaml: `[{name: a, http2_protocol_options: {}}]`,
			want: protocolSettings{http2: true, idleTimeout: time.Hour, h2: limits},
		},
		"HTTP/2 flood limits": {
			yaml: `
- name: a
  http2_protocol_options:
    max_consecutive_inbound_frames_with_empty_payload: 3
    max_inbound_priority_frames_per_stream: 7
    max_inbound_window_update_frames_per_data_frame_sent: 2
    max_outbound_frames: 50
    max_outbound_control_frames: 20`,
			want: protocolSettings{http2: true, idleTimeout: time.Hour,
				h2: h2Limits{maxEmptyFrames: 3, maxPriorityPerStream: 7, maxWindowUpdatePerData: 2}},
		},
		"explicit HTTP/2 with common options": {
			yaml: `
- name: a
  typed_extension_protocol_options:
    envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
      "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
      explicit_http_config: {http2_protocol_options: {}}
      common_http_protocol_options: {idle_timeout: 30s, max_stream_duration: 2.5s}`,
			want: protocolSettings{http2: true, idleTimeout: 30 * time.Second, maxStreamDuration: 2500 * time.Millisecond, h2: limits},
		},
		"deprecated cluster-level HTTP/1.1 and common options": {
			yaml: `
- name: a
  http_protocol_options: {enable_trailers: true, header_key_format: {proper_case_words: {}}}
  common_http_protocol_options: {idle_timeout: 10s, max_requests_per_connection: 5, max_stream_duration: 3s}`,
			want: protocolSettings{idleTimeout: 10 * time.Second, maxRequestsPerConn: 5, maxStreamDuration: 3 * time.Second,
				h1Format: upstream.HTTP1Format{ProperCase: true}, enableTrailers: true, h2: limits},
		},
		"explicit HTTP/1.1 with the absolute-form target": {
			yaml: `
- name: a
  typed_extension_protocol_options:
    envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
      "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
      explicit_http_config: {http_protocol_options: {send_fully_qualified_url: true}}`,
			want: protocolSettings{idleTimeout: time.Hour, h1Format: upstream.HTTP1Format{FullyQualifiedURL: true}, h2: limits},
		},
		"deprecated protocol_selection following the client": {
			yaml: `[{name: a, protocol_selection: USE_DOWNSTREAM_PROTOCOL, http2_protocol_options: {max_consecutive_inbound_frames_with_empty_payload: 4}}]`,
			want: protocolSettings{downstream: true, idleTimeout: time.Hour,
				h2: h2Limits{maxEmptyFrames: 4, maxPriorityPerStream: 100, maxWindowUpdatePerData: 10}},
		},
		"explicit HTTP/1.1 under the extension name, idle timeout off": {
			yaml: `
- name: a
  typed_extension_protocol_options:
    envoy.upstreams.http.http_protocol_options:
      "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
      explicit_http_config: {http_protocol_options: {}}
      common_http_protocol_options: {idle_timeout: 0s}`,
			want: protocolSettings{h2: limits},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m, _, _ := newTestManager(t, tc.yaml)
			got := m.Cluster("a").settings.protocol
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(protocolSettings{}, h2Limits{})); diff != "" {
				t.Errorf("protocol (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStats(t *testing.T) {
	_, store, _ := newTestManager(t, `
- name: web
  load_assignment:
    cluster_name: web
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 1}}}
        load_balancing_weight: 5
      - endpoint: {address: {socket_address: {address: 127.0.0.2, port_value: 1}}}
        health_status: UNHEALTHY
      - endpoint: {address: {socket_address: {address: 127.0.0.3, port_value: 1}}}
        health_status: DEGRADED
- name: other
  alt_stat_name: renamed
`)
	counters := map[string]uint64{
		"cluster_manager.cluster_added":     2,
		"cluster_manager.cluster_removed":   0,
		"cluster_manager.cluster_modified":  0,
		"cluster.web.membership_change":     1,
		"cluster.renamed.membership_change": 1,
		"cluster.web.upstream_cx_total":     0,
	}
	gauges := map[string]int64{
		"cluster_manager.active_clusters":  2,
		"cluster_manager.warming_clusters": 0,
		"cluster.web.membership_total":     3,
		"cluster.web.membership_healthy":   1,
		"cluster.web.membership_degraded":  1,
		"cluster.web.membership_excluded":  0,
		"cluster.web.max_host_weight":      5,
		"cluster.renamed.membership_total": 0,
	}
	for name, want := range counters {
		if got := store.Counter(name).Value(); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	for name, want := range gauges {
		if got := store.Gauge(name).Value(); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}
