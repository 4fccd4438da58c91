package bootstrap

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// TestPlainClusterKnowsEveryField fails when a message isPlainCluster
// reads gets a field it does not read (a newer API): the shortcut would
// pass a cluster with that field unseen, whatever the table says of it.
func TestPlainClusterKnowsEveryField(t *testing.T) {
	clusterFields := []protoreflect.Name{}
	fields := (&clusterv3.Cluster{}).ProtoReflect().Descriptor().Fields()
	// Every field of Cluster is read by isPlainCluster's list: the names
	// below are the ones the list was written from.
	read := map[protoreflect.Message][]protoreflect.Name{
		(&clusterv3.Cluster{}).ProtoReflect(): {"transport_socket_matches", "transport_socket_matcher", "name", "alt_stat_name",
			"stats_matcher", "type", "cluster_type", "eds_cluster_config", "connect_timeout", "per_connection_buffer_limit_bytes",
			"per_connection_buffer_high_watermark_timeout", "lb_policy", "load_assignment", "health_checks",
			"max_requests_per_connection", "circuit_breakers", "upstream_http_protocol_options", "common_http_protocol_options",
			"http_protocol_options", "http2_protocol_options", "typed_extension_protocol_options", "dns_refresh_rate",
			"dns_jitter", "dns_failure_refresh_rate", "respect_dns_ttl", "dns_lookup_family", "dns_resolvers",
			"use_tcp_for_dns_lookups", "dns_resolution_config", "typed_dns_resolver_config", "wait_for_warm_on_init",
			"outlier_detection", "cleanup_interval", "upstream_bind_config", "lb_subset_config", "ring_hash_lb_config",
			"maglev_lb_config", "original_dst_lb_config", "least_request_lb_config", "round_robin_lb_config",
			"common_lb_config", "transport_socket", "metadata", "protocol_selection", "upstream_connection_options",
			"close_connections_on_host_health_failure", "ignore_health_on_host_removal", "filters", "load_balancing_policy",
			"lrs_server", "lrs_report_endpoint_metrics", "track_timeout_budgets", "upstream_config", "track_cluster_stats",
			"preconnect_policy", "connection_pool_per_downstream_connection", "queuing_policies"},
		(&clusterv3.Cluster_EdsClusterConfig{}).ProtoReflect(): {"eds_config", "service_name"},
		(&corev3.ConfigSource{}).ProtoReflect(): {"authorities", "path", "path_config_source", "api_config_source", "ads", "self",
			"initial_fetch_timeout", "resource_api_version"},
		(&corev3.AggregatedConfigSource{}).ProtoReflect(): {},
	}
	for i := range fields.Len() {
		clusterFields = append(clusterFields, fields.Get(i).Name())
	}
	for m, names := range read {
		fields := m.Descriptor().Fields()
		for i := range fields.Len() {
			if name := fields.Get(i).Name(); !slices.Contains(names, name) {
				t.Errorf("%s has a field %s that isPlainCluster does not read", m.Descriptor().FullName(), name)
			}
		}
	}
	if len(clusterFields) == 0 {
		t.Fatal("no fields in Cluster's descriptor")
	}
	if !plainClusters {
		t.Error("the support table restricts a field of the plain cluster: the shortcut is off (update plainClusterFields or isPlainCluster)")
	}
}

// TestPlainClusterAgreesWithTheWalk generates clusters with each field of
// the plain shape present or not, with good, bad and unsupported values,
// and now and then a field outside the shape, and checks the shortcut
// against the support walk: a cluster it passes has no finding there,
// one of the plain shape with no finding there is passed, one with a
// field outside the shape is not, and ValidateCluster's errors are the
// same with and without it.
func TestPlainClusterAgreesWithTheWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 2))
	shortcuts := 0
	const n = 4000
	for i := range n {
		c, plainOnly := randomCluster(rng)
		sc := supportChecker{}
		sc.message(c.ProtoReflect(), "")
		walk := append(sc.pgv, sc.unsupported...)
		fast := isPlainCluster(c, true)
		switch {
		case fast && len(walk) > 0:
			t.Fatalf("cluster %d passed by the shortcut, refused by the walk (%v): %v", i, walk, c)
		case plainOnly && len(walk) == 0 && !fast:
			t.Fatalf("cluster %d of the plain shape passes the walk but not the shortcut: %v", i, c)
		case !plainOnly && fast:
			t.Fatalf("cluster %d has a field outside the plain shape and was passed by the shortcut: %v", i, c)
		}
		if fast {
			shortcuts++
		}
		if a, b := errText(validateCluster(c, nil, true)), errText(validateCluster(c, nil, false)); a != b {
			t.Fatalf("cluster %d: with the shortcut %q, without %q", i, a, b)
		}
	}
	if shortcuts < n/10 || shortcuts > n*9/10 {
		t.Fatalf("%d of %d clusters took the shortcut: the generator is off", shortcuts, n)
	}
}

// randomCluster makes a cluster with each field of the plain shape
// present or not, with a good, bad or unsupported value, and sometimes a
// field outside it; plain says whether it has only fields of the plain
// shape (good or bad values).
func randomCluster(rng *rand.Rand) (c *clusterv3.Cluster, plain bool) {
	plain = true
	odd := func(percent int) bool { return rng.IntN(100) < percent }
	c = &clusterv3.Cluster{}
	if !odd(5) {
		c.Name = "c1"
	}
	if odd(5) {
		c.AltStatName = "alt"
	}
	switch {
	case odd(5):
		c.ClusterDiscoveryType = &clusterv3.Cluster_ClusterType{ClusterType: &clusterv3.Cluster_CustomClusterType{Name: "custom"}}
		plain = false
	case odd(10):
		// No type: STATIC.
	default:
		// Every value, the undefined 9 among them.
		c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_DiscoveryType(rng.IntN(10))}
	}
	if odd(70) {
		c.ConnectTimeout = durationpb.New(time.Duration(rng.IntN(3)-1) * time.Second)
	}
	if odd(30) {
		c.LbPolicy = clusterv3.Cluster_LbPolicy(rng.IntN(11)) // 10 is undefined
	}
	if odd(80) {
		c.EdsClusterConfig = &clusterv3.Cluster_EdsClusterConfig{}
		if odd(50) {
			c.EdsClusterConfig.ServiceName = "svc"
		}
		if odd(85) {
			src := &corev3.ConfigSource{}
			c.EdsClusterConfig.EdsConfig = src
			switch {
			case odd(5):
				src.ConfigSourceSpecifier = &corev3.ConfigSource_Self{Self: &corev3.SelfConfigSource{}}
				plain = false
			case odd(5):
				src.ConfigSourceSpecifier = &corev3.ConfigSource_ApiConfigSource{ApiConfigSource: &corev3.ApiConfigSource{ApiType: corev3.ApiConfigSource_GRPC}}
				plain = false
			case odd(5):
				//lint:ignore SA1019 the shortcut must refuse the deprecated path too
				src.ConfigSourceSpecifier = &corev3.ConfigSource_Path{Path: "/etc/eds.yaml"}
				plain = false
			case odd(10):
				// No specifier.
			default:
				src.ConfigSourceSpecifier = &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}
			}
			if odd(30) {
				src.ResourceApiVersion = corev3.ApiVersion(rng.IntN(4)) // 3 is undefined
			}
			if odd(10) {
				src.InitialFetchTimeout = durationpb.New(time.Second)
			}
			if odd(4) {
				src.Authorities = []*xdscorev3.Authority{{Name: "a"}}
				plain = false
			}
		}
	}
	// A field outside the shape now and then, supported or not.
	switch rng.IntN(12) {
	case 0:
		c.CircuitBreakers = &clusterv3.CircuitBreakers{}
		plain = false
	case 1:
		c.PerConnectionBufferLimitBytes = wrapperspb.UInt32(1024)
		plain = false
	case 2:
		c.LrsReportEndpointMetrics = []string{"cpu"}
		plain = false
	case 3:
		c.ConnectionPoolPerDownstreamConnection = true
		plain = false
	case 4:
		c.DnsLookupFamily = clusterv3.Cluster_V4_ONLY
		plain = false
	case 5:
		c.Metadata = &corev3.Metadata{}
		plain = false
	}
	return proto.CloneOf(c), plain
}
