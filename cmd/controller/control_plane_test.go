package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/controller/inject"
)

// TestControlPlaneFlags checks that the --sidecar-control-plane flags, as
// the chart passes them, make the injected proxies' control plane, the CA
// file read at start.
func TestControlPlaneFlags(t *testing.T) {
	ca := filepath.Join(t.TempDir(), "ca-bundle.pem")
	const pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	if err := os.WriteFile(ca, []byte(pem), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		args []string
		want inject.ControlPlane
	}{
		"clear text": {args: []string{"--sidecar-control-plane=xds.mesh-system.svc:18000"}, want: inject.ControlPlane{Address: "xds.mesh-system.svc", Port: 18000}},
		"IPv6, delta, TLS": {
			args: []string{"--sidecar-control-plane=[fd00::5]:15012", "--sidecar-control-plane-api-type=DELTA_GRPC", "--sidecar-control-plane-ca-file=" + ca, "--sidecar-control-plane-sni=xds.example"},
			want: inject.ControlPlane{Address: "fd00::5", Port: 15012, Delta: true, CABundle: pem, SNI: "xds.example"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			o, _, err := parseOptions(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := injectConfig(o)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.ControlPlane == nil || *cfg.ControlPlane != tc.want {
				t.Errorf("control plane %+v, want %+v", cfg.ControlPlane, tc.want)
			}
		})
	}
	o, _, err := parseOptions(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := injectConfig(o); err != nil || cfg.ControlPlane != nil {
		t.Errorf("without the flags: %v, %v", cfg.ControlPlane, err)
	}
}
