package kubectl

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSplitCommand(t *testing.T) {
	cases := map[string]struct {
		args     []string
		wantName string
		wantRest []string
	}{
		"first":                  {[]string{"stats", "web-0"}, "stats", []string{"web-0"}},
		"after a global value":   {[]string{"-n", "ns", "stats", "web-0"}, "stats", []string{"-n", "ns", "web-0"}},
		"after --flag=value":     {[]string{"--namespace=ns", "log", "p"}, "log", []string{"--namespace=ns", "p"}},
		"after a bool flag":      {[]string{"-h", "stats"}, "stats", []string{"-h"}},
		"long global value":      {[]string{"--context", "stats", "drain", "p"}, "drain", []string{"--context", "stats", "p"}},
		"none":                   {[]string{"-n", "ns"}, "", []string{"-n", "ns"}},
		"after the end of flags": {[]string{"--", "stats"}, "", []string{"--", "stats"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gotName, gotRest := splitCommand(tc.args)
			if gotName != tc.wantName || !cmp.Equal(gotRest, tc.wantRest) {
				t.Errorf("splitCommand(%q) = %q, %q; want %q, %q", tc.args, gotName, gotRest, tc.wantName, tc.wantRest)
			}
		})
	}
}

// TestRunErrors runs command lines that fail before any pod is reached:
// the kubeconfig names a server nobody listens on.
func TestRunErrors(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]
users: [{name: u, user: {}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: ns}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	k := []string{"--kubeconfig", kubeconfig}
	tapFiles := map[string]string{"tap-a.yaml": "config_id: a\ntap_config: {}\n", "tap-none.yaml": "match: {any_match: true}\n",
		"tap-extra.yaml": "config_id: a\nformat: x\n", "tap-list.yaml": "- a\n"}
	for name, body := range tapFiles {
		tapFiles[name] = filepath.Join(filepath.Dir(kubeconfig), name)
		if err := os.WriteFile(tapFiles[name], []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cases := map[string]struct {
		args       []string
		wantStderr string
	}{
		"no command":      {nil, "error: no command given\n"},
		"unknown command": {[]string{"proxyconfig"}, `error: unknown command "proxyconfig"; valid commands: drain, log, proxy-config, runtime, stats, status, tap, version` + "\n"},
		"unknown flag":    {[]string{"stats", "--filtre", "x", "p"}, "error: stats: unknown flag: --filtre\n"},
		"unknown kind":    {append(k, "proxy-config", "hosts", "p"), "error: proxy-config: unknown kind \"hosts\"; valid kinds: clusters, listeners, routes, endpoints, secrets, bootstrap\n"},
		"missing pod":     {append(k, "proxy-config", "clusters"), "error: proxy-config: want clusters|listeners|routes|endpoints|secrets|bootstrap POD, got 1 arguments\n"},
		"bad output":      {append(k, "proxy-config", "clusters", "p", "-o", "wide"), "error: --output: \"wide\" is not json or yaml\n"},
		"bad filter":      {append(k, "stats", "p", "--filter", "("), "error: --filter: error parsing regexp: missing closing ): `(`\n"},
		"bad component":   {append(k, "log", "p", "http"), "error: log: \"http\" is not LOGGER=LEVEL\n"},
		"bad runtime":     {append(k, "runtime", "p", "=1"), "error: runtime: \"=1\" is not KEY=VALUE\n"},
		"tap without id":  {append(k, "tap", "p"), "error: tap: --config-id or -f is required\n"},
		"tap bad count":   {append(k, "tap", "p", "--config-id", "a", "--count", "-1"), "error: tap: --count: -1 is negative\n"},
		"tap bad output":  {append(k, "tap", "p", "--config-id", "a", "-o", "wide"), "error: --output: \"wide\" is not json or yaml\n"},
		"tap two pods":    {append(k, "tap", "p", "q", "--config-id", "a"), "error: tap: want POD, got 2 arguments\n"},
		"tap no file":     {append(k, "tap", "p", "-f", "/nonexistent/tap.yaml"), "error: tap: open /nonexistent/tap.yaml: no such file or directory\n"},
		"tap ids differ":  {append(k, "tap", "p", "-f", tapFiles["tap-a.yaml"], "--config-id", "b"), fmt.Sprintf("error: tap: --config-id \"b\" and the config_id \"a\" of %s differ\n", tapFiles["tap-a.yaml"])},
		"tap file no id":  {append(k, "tap", "p", "-f", tapFiles["tap-none.yaml"]), fmt.Sprintf("error: tap: %s has no config_id: pass --config-id\n", tapFiles["tap-none.yaml"])},
		"tap file extra":  {append(k, "tap", "p", "-f", tapFiles["tap-extra.yaml"]), fmt.Sprintf("error: tap: %s: unknown field \"format\" of a /tap request (config_id, tap_config)\n", tapFiles["tap-extra.yaml"])},
		"tap file list":   {append(k, "tap", "p", "-f", tapFiles["tap-list.yaml"]), fmt.Sprintf("error: tap: %s: want a /tap request (config_id, tap_config) or a tap_config, as a YAML or JSON object\n", tapFiles["tap-list.yaml"])},
		"bad transport":   {[]string{"stats", "p", "--transport", "pigeon"}, "error: stats: --transport: \"pigeon\" is not portforward or direct\n"},
		"bad kubeconfig":  {[]string{"--kubeconfig", "/nonexistent/kubeconfig", "stats", "p"}, "error: kubeconfig: stat /nonexistent/kubeconfig: no such file or directory\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run(context.Background(), tc.args, &stdout, &stderr)
			if code != 1 {
				t.Errorf("exit code %d, want 1", code)
			}
			got := stderr.String()
			if name == "no command" {
				// The usage comes first.
				if !strings.HasPrefix(got, "kubectl outrigger:") {
					t.Errorf("no usage on stderr: %q", got)
				}
				got = got[strings.LastIndex(got, "error:"):]
			}
			if got != tc.wantStderr {
				t.Errorf("stderr = %q, want %q", got, tc.wantStderr)
			}
		})
	}
}

func TestHelpAndVersion(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		var stdout, stderr bytes.Buffer
		if code := Run(context.Background(), args, &stdout, &stderr); code != 0 || stderr.Len() != 0 {
			t.Fatalf("%q: exit %d, stderr %q", args, code, stderr.String())
		}
		for _, c := range commandNames() {
			if !strings.Contains(stdout.String(), "\n  "+c+" ") {
				t.Errorf("%q: usage does not list %s:\n%s", args, c, stdout.String())
			}
		}
	}
	var stdout, stderr bytes.Buffer
	if code := Run(context.Background(), []string{"stats", "--help"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "--filter string") {
		t.Errorf("stats --help: exit %d, stdout %q", code, stdout.String())
	}
	stdout.Reset()
	if code := Run(context.Background(), []string{"version"}, &stdout, &stderr); code != 0 || !strings.HasPrefix(stdout.String(), "kubectl-outrigger ") {
		t.Errorf("version: exit %d, stdout %q", code, stdout.String())
	}
}

func TestStatusParts(t *testing.T) {
	if got := shortVersion("0123456789abcdef/1.2.3/Clean/RELEASE/GoTLS"); got != "1.2.3 (0123456)" {
		t.Errorf("shortVersion = %q", got)
	}
	if got := shortVersion("odd"); got != "odd" {
		t.Errorf("shortVersion(odd) = %q", got)
	}
	last, ok := latestUpdate([]byte(`{"configs":[{"last_updated":"2026-01-02T03:04:00Z"},{"dynamic":[{"x":{"last_updated":"2026-01-02T03:05:00.5Z"}}]},{"last_updated":"junk"}]}`))
	if !ok || !last.Equal(time.Date(2026, 1, 2, 3, 5, 0, 5e8, time.UTC)) {
		t.Errorf("latestUpdate = %v, %v", last, ok)
	}
	if _, ok := latestUpdate([]byte(`{"configs":[]}`)); ok {
		t.Error("latestUpdate found a time in a dump without one")
	}
	help := "admin commands are:\n  /: Admin home page\n  /stats: stats\n      format: x\n  /tap (POST): tap filter control\n"
	if !hasEndpoint(help, "/tap") || !hasEndpoint(help, "/stats") || hasEndpoint(help, "/taps") || hasEndpoint(help, "format") {
		t.Error("hasEndpoint misreads /help")
	}
	for d, want := range map[time.Duration]string{-time.Second: "0s", 90 * time.Second: "90s", 5 * time.Minute: "5m", 3 * time.Hour: "3h", 72 * time.Hour: "3d"} {
		if got := age(d); got != want {
			t.Errorf("age(%s) = %q, want %q", d, got, want)
		}
	}
}
