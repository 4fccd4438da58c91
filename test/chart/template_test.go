package chart

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/outrigger-dev/outrigger/internal/golden"
)

// The release every rendering test installs.
const (
	testRelease   = "outrigger"
	testNamespace = "outrigger-system"
)

func TestTemplateGolden(t *testing.T) {
	tests := map[string]struct {
		values string
	}{
		"default":          {},
		"full":             {values: filepath.Join("testdata", "full-values.yaml")},
		"webhook-off":      {values: filepath.Join("testdata", "webhook-off-values.yaml")},
		"selfsigned":       {values: filepath.Join("testdata", "selfsigned-values.yaml")},
		"monitoring":       {values: filepath.Join("testdata", "monitoring-values.yaml")},
		"monitoring-proxy": {values: filepath.Join("testdata", "monitoring-proxy-values.yaml")},
		"control-plane":    {values: filepath.Join("testdata", "control-plane-values.yaml")},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out := mustHelm(t, renderArgs(t, testRelease, testNamespace, tc.values)...)
			golden.Check(t, filepath.Join("testdata", name+".golden.yaml"), []byte(maskSecrets(out)))
		})
	}
}

func TestTemplateRejectsBadValues(t *testing.T) {
	tests := map[string]struct {
		set  []string
		want string
	}{
		"unknown key":            {set: []string{"controller.wrokers=4"}, want: "wrokers"},
		"transport":              {set: []string{"controller.transport=ssh"}, want: "/controller/transport"},
		"workers below one":      {set: []string{"controller.workers=0"}, want: "/controller/workers"},
		"log level":              {set: []string{"controller.logLevel=verbose"}, want: "/controller/logLevel"},
		"namespace not DNS":      {set: []string{"controller.namespaces={Shop}"}, want: "/controller/namespaces/0"},
		"admin port range":       {set: []string{"sidecar.adminPort=70000"}, want: "/sidecar/adminPort"},
		"probe port not integer": {set: []string{"sidecar.probePort=ready"}, want: "/sidecar/probePort"},
		"same ports":             {set: []string{"sidecar.adminPort=9902"}, want: "sidecar.adminPort and sidecar.probePort must differ"},
		"failure policy":         {set: []string{"webhook.failurePolicy=Maybe"}, want: "/webhook/failurePolicy"},
		"timeout above 30":       {set: []string{"webhook.timeoutSeconds=31"}, want: "/webhook/timeoutSeconds"},
		"issuerRef unknown key":  {set: []string{"webhook.certManager.issuerRef.nmae=ca"}, want: "nmae"},
		"empty image repository": {set: []string{"sidecar.image.repository="}, want: "/sidecar/image/repository"},
		"qps zero":               {set: []string{"controller.kubeAPI.qps=0"}, want: "/controller/kubeAPI/qps"},
		"qps not a number":       {set: []string{"controller.kubeAPI.qps=fast"}, want: "/controller/kubeAPI/qps"},
		"burst zero":             {set: []string{"controller.kubeAPI.burst=0"}, want: "/controller/kubeAPI/burst"},
		"lease duration a string": {set: []string{"controller.leaderElection.leaseDurationSeconds=15s"},
			want: "/controller/leaderElection/leaseDurationSeconds"},
		"prometheus naming":           {set: []string{"sidecar.prometheusNaming=prometheus"}, want: "/sidecar/prometheusNaming"},
		"control plane api type":      {set: []string{"sidecar.controlPlane.address=xds", "sidecar.controlPlane.apiType=REST"}, want: "/sidecar/controlPlane/apiType"},
		"control plane port":          {set: []string{"sidecar.controlPlane.address=xds", "sidecar.controlPlane.port=0"}, want: "/sidecar/controlPlane/port"},
		"control plane url":           {set: []string{"sidecar.controlPlane.address=https://xds"}, want: "/sidecar/controlPlane/address"},
		"control plane and bootstrap": {set: []string{"sidecar.controlPlane.address=xds", "sidecar.bootstrap=x"}, want: "sidecar.controlPlane.address and sidecar.bootstrap cannot both be set"},
		"control plane sni alone":     {set: []string{"sidecar.controlPlane.address=xds", "sidecar.controlPlane.tls.sni=x"}, want: "sidecar.controlPlane.tls.sni is only used with TLS"},
		"control plane tls alone":     {set: []string{"sidecar.controlPlane.tls.caBundle=x"}, want: "sidecar.controlPlane.tls needs sidecar.controlPlane.address"},
		"tls secret not a name":       {set: []string{"sidecar.tlsSecret=Mesh_TLS"}, want: "/sidecar/tlsSecret"},
		"dashboard unknown key":       {set: []string{"monitoring.grafanaDashboard.lable=x"}, want: "lable"},
		"dashboard label number":      {set: []string{"monitoring.grafanaDashboard.labels.grafana_dashboard=1"}, want: "/monitoring/grafanaDashboard/labels/grafana_dashboard"},
		"rule namespace not DNS":      {set: []string{"monitoring.prometheusRule.namespace=Mon"}, want: "/monitoring/prometheusRule/namespace"},
		"cert expiry unknown key":     {set: []string{"monitoring.prometheusRule.certExpiry.days=7"}, want: "days"},
		"leader election unknown key": {set: []string{"controller.leaderElection.leaseDuration=15"}, want: "leaseDuration"},
		"lease not above renew deadline": {set: []string{"controller.leaderElection.leaseDurationSeconds=10"},
			want: "controller.leaderElection.leaseDurationSeconds (10) must be greater than renewDeadlineSeconds (10)"},
		"renew deadline within the retry jitter": {set: []string{"controller.leaderElection.retryPeriodSeconds=9"},
			want: "controller.leaderElection.renewDeadlineSeconds (10) must be greater than 1.2 × retryPeriodSeconds (9)"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			args := renderArgs(t, testRelease, testNamespace, "")
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			r := runHelm(t, args...)
			if r.err == nil {
				t.Fatalf("helm template %v succeeded, want an error mentioning %q", tc.set, tc.want)
			}
			if !strings.Contains(r.stderr, tc.want) {
				t.Errorf("helm template %v failed with\n%s\nwant a message mentioning %q", tc.set, r.stderr, tc.want)
			}
		})
	}
}

// TestGeneratedWebhookCertificate checks the certificate made without
// cert-manager: the Secret's serving certificate is signed by the CA in the
// webhook's caBundle for the Service's DNS names, and its key matches.
func TestGeneratedWebhookCertificate(t *testing.T) {
	objs := decodeObjects(t, mustHelm(t, renderArgs(t, testRelease, testNamespace, "")...))
	secret := findObject(t, objs, "Secret", testRelease+"-webhook-tls")
	webhook := findObject(t, objs, "MutatingWebhookConfiguration", testRelease+"-inject")

	data := func(key string) []byte {
		t.Helper()
		s, _, _ := unstructured.NestedString(secret.Object, "data", key)
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(b) == 0 {
			t.Fatalf("secret data %s: not base64 PEM (%v)", key, err)
		}
		return b
	}
	hooks, _, _ := unstructured.NestedSlice(webhook.Object, "webhooks")
	if len(hooks) != 2 {
		t.Fatalf("webhooks: got %d, want 2", len(hooks))
	}
	var bundles []string
	for i, h := range hooks {
		hook, ok := h.(map[string]any)
		if !ok {
			t.Fatalf("webhooks[%d] is a %T, not an object", i, h)
		}
		bundle, _, _ := unstructured.NestedString(hook, "clientConfig", "caBundle")
		bundles = append(bundles, bundle)
	}
	if bundles[0] != bundles[1] {
		t.Error("the webhook's two entries have different caBundles")
	}
	caPEM, err := base64.StdEncoding.DecodeString(bundles[0])
	if err != nil {
		t.Fatalf("caBundle is not base64: %v", err)
	}
	if string(caPEM) != string(data("ca.crt")) {
		t.Error("the webhook's caBundle is not the Secret's ca.crt")
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("caBundle holds no PEM certificate")
	}
	cert := parseCert(t, data("tls.crt"))
	for _, name := range []string{
		"outrigger-webhook.outrigger-system.svc",
		"outrigger-webhook.outrigger-system.svc.cluster.local",
	} {
		if _, err := cert.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("serving certificate for %s: %v", name, err)
		}
	}
	if _, err := tls.X509KeyPair(data("tls.crt"), data("tls.key")); err != nil {
		t.Errorf("tls.crt and tls.key do not pair: %v", err)
	}
}

// TestChartCRDsMatchGenerated fails when charts/outrigger/crds differs from
// config/crd/bases (run `make manifests`, which copies them).
func TestChartCRDsMatchGenerated(t *testing.T) {
	want := readYAMLDir(t, filepath.Join(repoRoot(t), "config", "crd", "bases"))
	got := readYAMLDir(t, filepath.Join(chartDir(t), "crds"))
	if len(want) == 0 {
		t.Fatal("config/crd/bases holds no CRD")
	}
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			t.Errorf("charts/outrigger/crds/%s is missing (run make manifests)", name)
		case g != w:
			t.Errorf("charts/outrigger/crds/%s differs from config/crd/bases (run make manifests)", name)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("charts/outrigger/crds/%s is not in config/crd/bases (run make manifests)", name)
		}
	}
}

// readYAMLDir maps each .yaml file's name in dir to its contents.
func readYAMLDir(t testing.TB, dir string) map[string]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files := make(map[string]string, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Base(p)] = string(b)
	}
	return files
}

// parseCert decodes the first certificate of a PEM block.
func parseCert(t testing.TB, pemBytes []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("not a PEM certificate: %q", pemBytes)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatalf("parse certificate: %v", err)
	}
	return cert
}
