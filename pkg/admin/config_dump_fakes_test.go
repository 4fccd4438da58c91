package admin

import (
	"testing"
	"time"

	typedstructv3 "github.com/cncf/xds/go/xds/type/v3"
	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// secretText marks every secret of the sample dumps; it must never reach
// a /config_dump answer.
const secretText = "s3cr3t"

// fakeDumps is a ConfigDumpSource with a sample of every dump kind, static
// and dynamic resources, and secrets in each place they can hide.
type fakeDumps struct {
	rec   *recorder
	dumps func(includeEDS bool) []proto.Message
	init  *adminv3.UnreadyTargetsDumps
}

func (f *fakeDumps) ConfigDump(includeEDS bool) []proto.Message {
	f.rec.add("ConfigDump.ConfigDump includeEDS=%v", includeEDS)
	return f.dumps(includeEDS)
}

func (f *fakeDumps) InitDump() *adminv3.UnreadyTargetsDumps {
	f.rec.add("ConfigDump.InitDump")
	return f.init
}

// mustAny packs m for the samples.
func mustAny(t testing.TB, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// secretCert is a TLS certificate whose key and password are secrets.
func secretCert() *tlsv3.TlsCertificate {
	return &tlsv3.TlsCertificate{
		CertificateChain: &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: "/etc/tls/cert.pem"}},
		PrivateKey:       &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: secretText}},
		Password:         &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: []byte(secretText)}},
	}
}

func sampleCluster(t testing.TB, name string) *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 name,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC},
		ConnectTimeout:       durationpb.New(250 * time.Millisecond),
		TransportSocket: &corev3.TransportSocket{
			Name: "envoy.transport_sockets.tls",
			ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: mustAny(t, &tlsv3.UpstreamTlsContext{
				CommonTlsContext: &tlsv3.CommonTlsContext{TlsCertificates: []*tlsv3.TlsCertificate{secretCert()}},
				Sni:              name + ".internal",
			})},
		},
	}
}

// sampleDumps returns new dumps at every call, as the server does.
func sampleDumps(t testing.TB) func(bool) []proto.Message {
	return func(includeEDS bool) []proto.Message {
		at := timestamppb.New(time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC))
		later := timestamppb.New(time.Date(2026, 5, 1, 10, 5, 0, 0, time.UTC))
		listener := &listenerv3.Listener{
			Name: "ingress",
			Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
				Address: "127.0.0.1", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 10000}}}},
			FilterChains: []*listenerv3.FilterChain{{
				TransportSocket: &corev3.TransportSocket{
					Name: "envoy.transport_sockets.tls",
					// Untyped but typed by URL: redactable.
					ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: mustAny(t, &typedstructv3.TypedStruct{
						TypeUrl: "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext",
						Value: mustStruct(t, map[string]any{
							"common_tls_context": map[string]any{
								"tls_certificates": []any{map[string]any{
									"certificate_chain": map[string]any{"filename": "/etc/tls/ingress.pem"},
									"private_key":       map[string]any{"inline_string": secretText},
								}},
							},
						}),
					})},
				},
			}},
		}
		dumps := []proto.Message{
			&adminv3.BootstrapConfigDump{
				Bootstrap: &bootstrapv3.Bootstrap{
					Node: &corev3.Node{Id: "node-1", Cluster: "demo"},
					StaticResources: &bootstrapv3.Bootstrap_StaticResources{
						Secrets: []*tlsv3.Secret{{
							Name: "inline-cert",
							Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: secretCert()},
						}},
					},
				},
				LastUpdated: at,
			},
			&adminv3.ClustersConfigDump{
				VersionInfo: "v7",
				StaticClusters: []*adminv3.ClustersConfigDump_StaticCluster{
					{Cluster: mustAny(t, sampleCluster(t, "c1")), LastUpdated: at},
				},
				DynamicActiveClusters: []*adminv3.ClustersConfigDump_DynamicCluster{
					{VersionInfo: "v7", Cluster: mustAny(t, sampleCluster(t, "c2")), LastUpdated: later},
					{VersionInfo: "v7", Cluster: mustAny(t, sampleCluster(t, "c10")), LastUpdated: later},
				},
			},
		}
		if includeEDS {
			dumps = append(dumps, &adminv3.EndpointsConfigDump{
				StaticEndpointConfigs: []*adminv3.EndpointsConfigDump_StaticEndpointConfig{{
					EndpointConfig: mustAny(t, &endpointv3.ClusterLoadAssignment{
						ClusterName: "c1",
						Endpoints: []*endpointv3.LocalityLbEndpoints{{
							LbEndpoints: []*endpointv3.LbEndpoint{{
								HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
									Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
										Address: "127.0.0.1", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 8080}}}},
								}},
								HealthStatus: corev3.HealthStatus_HEALTHY,
							}},
						}},
					}),
				}},
			})
		}
		return append(dumps,
			&adminv3.ListenersConfigDump{
				StaticListeners: []*adminv3.ListenersConfigDump_StaticListener{
					{Listener: mustAny(t, listener), LastUpdated: at},
				},
				DynamicListeners: []*adminv3.ListenersConfigDump_DynamicListener{{
					Name: "egress",
					ActiveState: &adminv3.ListenersConfigDump_DynamicListenerState{
						VersionInfo: "3",
						Listener:    mustAny(t, &listenerv3.Listener{Name: "egress"}),
						LastUpdated: later,
					},
				}},
			},
			&adminv3.ScopedRoutesConfigDump{},
			&adminv3.RoutesConfigDump{
				StaticRouteConfigs: []*adminv3.RoutesConfigDump_StaticRouteConfig{{
					RouteConfig: mustAny(t, &routev3.RouteConfiguration{
						Name: "local_route",
						VirtualHosts: []*routev3.VirtualHost{{
							Name: "backend", Domains: []string{"*"},
						}},
					}),
					LastUpdated: at,
				}},
			},
			&adminv3.SecretsConfigDump{
				StaticSecrets: []*adminv3.SecretsConfigDump_StaticSecret{
					{
						Name: "inline-cert",
						Secret: mustAny(t, &tlsv3.Secret{
							Name: "inline-cert",
							Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: secretCert()},
						}),
					},
					{
						Name: "token",
						Secret: mustAny(t, &tlsv3.Secret{
							Name: "token",
							Type: &tlsv3.Secret_GenericSecret{GenericSecret: &tlsv3.GenericSecret{
								Secret: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: secretText}},
							}},
						}),
					},
				},
			},
		)
	}
}

func mustStruct(t testing.TB, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newDumpAdmin is an admin whose only family is the dump one.
func newDumpAdmin(t testing.TB) (*Admin, *fakeDumps) {
	t.Helper()
	src := &fakeDumps{
		rec:   &recorder{},
		dumps: sampleDumps(t),
		init: &adminv3.UnreadyTargetsDumps{UnreadyTargetsDumps: []*adminv3.UnreadyTargetsDumps_UnreadyTargetsDump{{
			Name:        "init manager Listener-local-init-manager ingress 1234",
			TargetNames: []string{"target RdsRouteConfigSubscription local_route"},
		}}},
	}
	return New(Options{ConfigDump: src, Log: (&logSink{}).logger()}), src
}
