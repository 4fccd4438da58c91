package server

import (
	"strings"
	"testing"
)

// lrsBootstrap is a bootstrap whose load reports go to the cluster named.
func lrsBootstrap(cluster string) string {
	return `{
  cluster_manager: {load_stats_config: {api_type: GRPC, transport_api_version: V3, grpc_services: [{envoy_grpc: {cluster_name: ` + cluster + `}}]}},
  static_resources: {clusters: [{name: lrs, type: STATIC, load_assignment: {cluster_name: lrs, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 1}}}}]}]}}]}
}`
}

func TestLoadReporterBuilt(t *testing.T) {
	s, _ := mustBuildServer(t, lrsBootstrap("lrs"))
	if s.loadReports == nil {
		t.Fatal("no load reporter for cluster_manager.load_stats_config")
	}
	if err := s.loadReports.Close(); err != nil {
		t.Errorf("close before start: %v", err)
	}
}

func TestLoadReporterUnknownCluster(t *testing.T) {
	_, _, err := buildServer(t, lrsBootstrap("nowhere"))
	const want = "cluster_manager.load_stats_config.grpc_services[0].envoy_grpc.cluster_name: unknown gRPC client cluster 'nowhere'"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("New: %v, want %q", err, want)
	}
}

func TestNoLoadReporterWithoutConfig(t *testing.T) {
	s, _ := mustBuildServer(t, `{static_resources: {}}`)
	if s.loadReports != nil {
		t.Error("a load reporter without cluster_manager.load_stats_config")
	}
	if err := s.loadReports.Close(); err != nil {
		t.Errorf("closing no reporter: %v", err)
	}
}

func TestLoadReporterGoogleGRPC(t *testing.T) {
	s, _ := mustBuildServer(t, `{cluster_manager: {load_stats_config: {api_type: GRPC, transport_api_version: V3,
  grpc_services: [{google_grpc: {target_uri: "127.0.0.1:1", stat_prefix: lrs}}]}}}`)
	if s.loadReports == nil {
		t.Fatal("no load reporter for a google_grpc service")
	}
	_ = s.loadReports.Close()
}
