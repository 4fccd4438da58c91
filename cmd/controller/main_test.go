package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outrigger-dev/outrigger/internal/golden"
)

// TestBadCommandLines checks that every bad command line is refused with
// one line on stderr and exit code 1, before anything starts.
func TestBadCommandLines(t *testing.T) {
	// A kubeconfig that loads (nothing listens at its server), for the
	// errors found after it is read.
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		args []string
		want string
	}{
		"unknown flag":        {args: []string{"--frobnicate"}, want: "error: unknown flag: --frobnicate\n"},
		"unknown transport":   {args: []string{"--transport=carrier-pigeon"}, want: "error: --transport: \"carrier-pigeon\" is not portforward or direct\n"},
		"no workers":          {args: []string{"--workers=0"}, want: "error: --workers: 0 is below 1\n"},
		"workers not a count": {args: []string{"--workers=many"}, want: "error: invalid argument \"many\" for \"--workers\" flag: strconv.ParseInt: parsing \"many\": invalid syntax\n"},
		"unknown log level":   {args: []string{"--log-level=loud"}, want: "error: --log-level: \"loud\" is not debug, info, warning or error\n"},
		"empty namespace":     {args: []string{"--namespaces=a,,b"}, want: "error: --namespaces: empty namespace name\n"},
		"zero admin timeout":  {args: []string{"--admin-timeout=0s"}, want: "error: --admin-timeout: 0s is not positive\n"},
		"bad duration":        {args: []string{"--poll-interval=soon"}, want: "error: invalid argument \"soon\" for \"--poll-interval\" flag: time: invalid duration \"soon\"\n"},
		"two errors, one line": {
			args: []string{"--workers=0", "--transport=x"},
			want: "error: --transport: \"x\" is not portforward or direct; --workers: 0 is below 1\n",
		},
		"stray argument":            {args: []string{"run"}, want: "error: unexpected argument \"run\"\n"},
		"missing kubeconfig":        {args: []string{"--kubeconfig=/nonexistent/kubeconfig"}, want: "error: --kubeconfig: stat /nonexistent/kubeconfig: no such file or directory\n"},
		"webhook port out of range": {args: []string{"--webhook-port=70000"}, want: "error: --webhook-port: 70000 is not a port number (0-65535)\n"},
		"empty cert dir":            {args: []string{"--webhook-cert-dir="}, want: "error: --webhook-cert-dir: empty\n"},
		"empty sidecar image":       {args: []string{"--sidecar-image="}, want: "error: --sidecar-image: empty\n"},
		"sidecar admin port zero":   {args: []string{"--sidecar-admin-port=0"}, want: "error: --sidecar-admin-port: 0 is not a port number (1-65535)\n"},
		"probe port is admin port":  {args: []string{"--sidecar-probe-port=9901"}, want: "error: --sidecar-probe-port: 9901 is the admin port too\n"},
		"bad tls secret":            {args: []string{"--sidecar-tls-secret=Mesh_TLS"}, want: "error: --sidecar-tls-secret: \"Mesh_TLS\" is not a Secret name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')\n"},
		"unknown naming":            {args: []string{"--sidecar-prometheus-naming=statsd"}, want: "error: --sidecar-prometheus-naming: \"statsd\" is neither proxy nor envoy\n"},
		"missing webhook certificate": {
			args: []string{"--kubeconfig", kubeconfig, "--webhook-cert-dir=/nonexistent/certs"},
			want: "error: --webhook-cert-dir: stat /nonexistent/certs/tls.crt: no such file or directory (mount the webhook's certificate there, or turn the webhook off with --webhook-port=0)\n",
		},
		"missing sidecar bootstrap":      {args: []string{"--sidecar-bootstrap=/nonexistent/bootstrap.yaml"}, want: "error: --sidecar-bootstrap: open /nonexistent/bootstrap.yaml: no such file or directory\n"},
		"control plane not host:port":    {args: []string{"--sidecar-control-plane=xds.mesh"}, want: "error: --sidecar-control-plane: address xds.mesh: missing port in address\n"},
		"control plane flags without it": {args: []string{"--sidecar-control-plane-sni=x"}, want: "error: --sidecar-control-plane-sni: needs --sidecar-control-plane\n"},
		"control plane api type": {args: []string{"--sidecar-control-plane=xds:18000", "--sidecar-control-plane-api-type=REST"},
			want: "error: --sidecar-control-plane-api-type: \"REST\" is neither GRPC nor DELTA_GRPC\n"},
		"control plane with a custom bootstrap": {args: []string{"--sidecar-control-plane=xds:18000", "--sidecar-bootstrap=/b.yaml"},
			want: "error: --sidecar-control-plane: a custom --sidecar-bootstrap names its own management server (dynamic_resources)\n"},
		"missing control plane CA": {args: []string{"--sidecar-control-plane=xds:18000", "--sidecar-control-plane-ca-file=/nonexistent/ca.crt"},
			want: "error: --sidecar-control-plane-ca-file: open /nonexistent/ca.crt: no such file or directory\n"},
		"qps zero":         {args: []string{"--kube-api-qps=0"}, want: "error: --kube-api-qps: 0 is not a positive number\n"},
		"qps not a number": {args: []string{"--kube-api-qps=NaN"}, want: "error: --kube-api-qps: NaN is not a positive number\n"},
		"qps infinite":     {args: []string{"--kube-api-qps=+Inf"}, want: "error: --kube-api-qps: +Inf is not a positive number\n"},
		"qps negative":     {args: []string{"--kube-api-qps=-1"}, want: "error: --kube-api-qps: -1 is not a positive number\n"},
		"qps not a float": {args: []string{"--kube-api-qps=fast"},
			want: "error: invalid argument \"fast\" for \"--kube-api-qps\" flag: strconv.ParseFloat: parsing \"fast\": invalid syntax\n"},
		"burst zero": {args: []string{"--kube-api-burst=0"}, want: "error: --kube-api-burst: 0 is below 1\n"},
		"lease not above renew deadline": {args: []string{"--leader-election-lease-duration=10s"},
			want: "error: --leader-election-lease-duration: 10s must be longer than --leader-election-renew-deadline (10s)\n"},
		"renew deadline within the retry jitter": {args: []string{"--leader-election-retry-period=9s"},
			want: "error: --leader-election-renew-deadline: 10s must be longer than 1.2 × --leader-election-retry-period (10.8s)\n"},
		"retry period zero": {args: []string{"--leader-election-retry-period=0s"}, want: "error: --leader-election-retry-period: 0s is not positive\n"},
		"negative lease":    {args: []string{"--leader-election-lease-duration=-1s"}, want: "error: --leader-election-lease-duration: -1s is not positive\n"},
		"identity with spaces": {args: []string{"--leader-election-identity= a"},
			want: "error: --leader-election-identity: \" a\" has leading or trailing spaces\n"},
		"leader election flags without leader election": {
			args: []string{"--leader-elect=false", "--leader-election-lease-duration=20s", "--leader-election-identity=a"},
			want: "error: --leader-election-identity: needs --leader-elect; --leader-election-lease-duration: needs --leader-elect\n",
		},
	}
	if _, err := os.Stat(inClusterNamespace); os.IsNotExist(err) {
		cases["no lease namespace outside a cluster"] = struct {
			args []string
			want string
		}{
			args: []string{"--kubeconfig", kubeconfig, "--webhook-port=0"},
			want: "error: --leader-election-namespace: required outside a cluster (" + inClusterNamespace + " cannot be read)\n",
		}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), tc.args, &stdout, &stderr)
			if code != 1 || stderr.String() != tc.want || stdout.Len() != 0 {
				t.Errorf("exit %d, stderr %q, stdout %q; want exit 1 and %q", code, stderr.String(), stdout.String(), tc.want)
			}
			if strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("stderr is not one line: %q", stderr.String())
			}
		})
	}
}

// TestHelp prints the usage on stdout and exits 0.
func TestHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		var stdout, stderr bytes.Buffer
		if code := run(t.Context(), []string{arg}, &stdout, &stderr); code != 0 || stderr.Len() != 0 {
			t.Fatalf("%s: exit %d, stderr %q", arg, code, stderr.String())
		}
		golden.Check(t, filepath.Join("testdata", "help.txt"), stdout.Bytes())
	}
}
