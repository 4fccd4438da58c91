package admin

import (
	"testing"

	udpatypev1 "github.com/cncf/xds/go/udpa/type/v1"
	typedstructv3 "github.com/cncf/xds/go/xds/type/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/anypb"
)

func inlineString(s string) *corev3.DataSource {
	return &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: s}}
}

func inlineBytes(s string) *corev3.DataSource {
	return &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: []byte(s)}}
}

func filename(s string) *corev3.DataSource {
	return &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: s}}
}

func TestRedact(t *testing.T) {
	tlsStruct := func(key string) map[string]any {
		return map[string]any{"common_tls_context": map[string]any{"tls_certificates": []any{
			map[string]any{"private_key": map[string]any{"inline_string": key}},
		}}}
	}
	cases := map[string]struct {
		in, want proto.Message
	}{
		"tls certificate": {
			in: &tlsv3.TlsCertificate{
				CertificateChain: inlineString("PUBLIC CERT"),
				PrivateKey:       inlineString(secretText),
				Password:         filename("/etc/tls/password"),
			},
			want: &tlsv3.TlsCertificate{
				CertificateChain: inlineString("PUBLIC CERT"),
				PrivateKey:       inlineString(redactedText),
				Password:         filename(redactedText),
			},
		},
		"bytes": {
			in:   &tlsv3.TlsCertificate{PrivateKey: inlineBytes(secretText)},
			want: &tlsv3.TlsCertificate{PrivateKey: inlineBytes(redactedText)},
		},
		"generic secret and its map": {
			in: &tlsv3.GenericSecret{
				Secret:  inlineString(secretText),
				Secrets: map[string]*corev3.DataSource{"a": inlineString(secretText), "b": filename("/b")},
			},
			want: &tlsv3.GenericSecret{
				Secret:  inlineString(redactedText),
				Secrets: map[string]*corev3.DataSource{"a": inlineString(redactedText), "b": filename(redactedText)},
			},
		},
		"session ticket keys": {
			in:   &tlsv3.TlsSessionTicketKeys{Keys: []*corev3.DataSource{inlineBytes(secretText), filename("/k2")}},
			want: &tlsv3.TlsSessionTicketKeys{Keys: []*corev3.DataSource{inlineBytes(redactedText), filename(redactedText)}},
		},
		"inside nested any": {
			in: &clusterv3.Cluster{Name: "c", TransportSocket: &corev3.TransportSocket{
				ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: mustAny(t, &tlsv3.UpstreamTlsContext{
					Sni:              "c.internal",
					CommonTlsContext: &tlsv3.CommonTlsContext{TlsCertificates: []*tlsv3.TlsCertificate{{PrivateKey: inlineString(secretText)}}},
				})},
			}},
			want: &clusterv3.Cluster{Name: "c", TransportSocket: &corev3.TransportSocket{
				ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: mustAny(t, &tlsv3.UpstreamTlsContext{
					Sni:              "c.internal",
					CommonTlsContext: &tlsv3.CommonTlsContext{TlsCertificates: []*tlsv3.TlsCertificate{{PrivateKey: inlineString(redactedText)}}},
				})},
			}},
		},
		"xds typed struct": {
			in: &typedstructv3.TypedStruct{
				TypeUrl: "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext",
				Value:   mustStruct(t, tlsStruct(secretText)),
			},
			want: &typedstructv3.TypedStruct{
				TypeUrl: "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext",
				Value:   mustStruct(t, tlsStruct(redactedText)),
			},
		},
		"udpa typed struct": {
			in: &udpatypev1.TypedStruct{
				TypeUrl: "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext",
				Value:   mustStruct(t, tlsStruct(secretText)),
			},
			want: &udpatypev1.TypedStruct{
				TypeUrl: "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext",
				Value:   mustStruct(t, tlsStruct(redactedText)),
			},
		},
		"typed struct of an unknown type stays": {
			in:   &typedstructv3.TypedStruct{TypeUrl: "type.googleapis.com/no.such.Type", Value: mustStruct(t, map[string]any{"k": "v"})},
			want: &typedstructv3.TypedStruct{TypeUrl: "type.googleapis.com/no.such.Type", Value: mustStruct(t, map[string]any{"k": "v"})},
		},
		"any of an unknown type stays": {
			in:   &anypb.Any{TypeUrl: "type.googleapis.com/no.such.Type", Value: []byte{0x0a, 0x01, 'x'}},
			want: &anypb.Any{TypeUrl: "type.googleapis.com/no.such.Type", Value: []byte{0x0a, 0x01, 'x'}},
		},
		"nothing sensitive": {
			in:   &routev3.RouteConfiguration{Name: "r", VirtualHosts: []*routev3.VirtualHost{{Name: "v", Domains: []string{"*"}}}},
			want: &routev3.RouteConfiguration{Name: "r", VirtualHosts: []*routev3.VirtualHost{{Name: "v", Domains: []string{"*"}}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := proto.Clone(tc.in)
			redact(got.ProtoReflect())
			if diff := cmp.Diff(tc.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("redacted message differs (-want +got):\n%s", diff)
			}
		})
	}
}
