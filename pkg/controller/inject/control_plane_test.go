package inject

import (
	"path/filepath"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	// The typed configs the control plane's cluster names.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"

	"github.com/outrigger-dev/outrigger/internal/golden"
)

// testCA is a PEM block the bootstrap carries as it is; the e2e suite
// checks a real one against a TLS management server.
const testCA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

// TestControlPlaneBootstrap checks that the built-in bootstraps joined to
// a control plane are valid v3 bootstraps with the ADS stream to the
// static cluster, and CDS and LDS over it. That the proxy takes its
// configuration from a real management server with them is the e2e
// suite's inject_args_test.go.
func TestControlPlaneBootstrap(t *testing.T) {
	cases := map[string]struct {
		cp      ControlPlane
		capture bool
		apiType corev3.ApiConfigSource_ApiType
		sni     string
	}{
		"plain":         {cp: ControlPlane{Address: "xds.mesh.svc", Port: 18000}, apiType: corev3.ApiConfigSource_GRPC},
		"delta capture": {cp: ControlPlane{Address: "10.0.0.5", Port: 15010, Delta: true}, capture: true, apiType: corev3.ApiConfigSource_DELTA_GRPC},
		"tls":           {cp: ControlPlane{Address: "xds.mesh.svc", Port: 443, CABundle: testCA}, apiType: corev3.ApiConfigSource_GRPC, sni: "xds.mesh.svc"},
		"tls sni":       {cp: ControlPlane{Address: "10.0.0.5", Port: 443, CABundle: testCA, SNI: "xds.example"}, apiType: corev3.ApiConfigSource_GRPC, sni: "xds.example"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if err := tc.cp.Validate(); err != nil {
				t.Fatal(err)
			}
			cfg := DefaultConfig()
			cfg.ControlPlane = &tc.cp
			text := cfg.bootstrap(9901, tc.capture)
			b := parseBootstrap(t, text)
			plain := parseBootstrap(t, Config{ProbePort: DefaultProbePort}.bootstrap(9901, tc.capture))
			cs := b.GetStaticResources().GetClusters()
			if len(cs) != len(plain.GetStaticResources().GetClusters())+1 || len(b.GetStaticResources().GetListeners()) != len(plain.GetStaticResources().GetListeners()) {
				t.Fatalf("want the bootstrap's clusters and listeners plus the control plane's cluster: %d clusters", len(cs))
			}
			xds := cs[len(cs)-1]
			ep := xds.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
			if xds.GetName() != ControlPlaneCluster || ep.GetAddress() != tc.cp.Address || ep.GetPortValue() != uint32(tc.cp.Port) {
				t.Errorf("cluster %s to %s:%d", xds.GetName(), ep.GetAddress(), ep.GetPortValue())
			}
			ads := b.GetDynamicResources().GetAdsConfig()
			if ads.GetApiType() != tc.apiType || ads.GetGrpcServices()[0].GetEnvoyGrpc().GetClusterName() != ControlPlaneCluster {
				t.Errorf("ads_config %v", ads)
			}
			if b.GetDynamicResources().GetCdsConfig().GetAds() == nil || b.GetDynamicResources().GetLdsConfig().GetAds() == nil {
				t.Errorf("clusters and listeners are not over ADS: %v", b.GetDynamicResources())
			}
			ts := xds.GetTransportSocket()
			if tc.sni == "" {
				if ts != nil {
					t.Errorf("a transport socket without TLS: %v", ts)
				}
			} else {
				var tlsCtx tlsv3.UpstreamTlsContext
				if err := ts.GetTypedConfig().UnmarshalTo(&tlsCtx); err != nil {
					t.Fatal(err)
				}
				vc := tlsCtx.GetCommonTlsContext().GetValidationContext()
				if tlsCtx.GetSni() != tc.sni || vc.GetTrustedCa().GetInlineString() != testCA || vc.GetMatchTypedSubjectAltNames()[0].GetMatcher().GetExact() != tc.sni {
					t.Errorf("TLS context %v", &tlsCtx)
				}
			}
			golden.Check(t, filepath.Join("testdata", "bootstrap-control-plane-"+slug(name)+".yaml"), []byte(text))
		})
	}
}

func TestControlPlaneValidate(t *testing.T) {
	for name, tc := range map[string]struct {
		cp   ControlPlane
		want string
	}{
		"no address":  {ControlPlane{Port: 1}, "address"},
		"url":         {ControlPlane{Address: "http://x", Port: 1}, "address"},
		"port":        {ControlPlane{Address: "x", Port: 70000}, "port"},
		"sni, no TLS": {ControlPlane{Address: "x", Port: 1, SNI: "y"}, "sni"},
		"not PEM":     {ControlPlane{Address: "x", Port: 1, CABundle: "hello"}, "CA bundle"},
	} {
		err := tc.cp.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error about %s", name, err, tc.want)
		}
	}
}
