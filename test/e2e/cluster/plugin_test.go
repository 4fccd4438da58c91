package cluster_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
	"github.com/outrigger-dev/outrigger/pkg/controller/adminclient"
)

// pluginClusterYAML adds a static cluster to a sidecar's bootstrap, so
// that proxy-config clusters and endpoints have one to show: it sends to
// the sidecar's own listener.
const pluginClusterYAML = `  clusters:
  - name: backend
    type: STATIC
    connect_timeout: 1s
    load_assignment:
      cluster_name: backend
      endpoints:
      - lb_endpoints:
        - endpoint:
            address:
              socket_address: {address: "%s", port_value: %d}
`

// tapFilterYAML is a tap filter with admin_config (config id web-tap),
// put before the router of the sidecar's listener.
const tapFilterYAML = `          - name: envoy.filters.http.tap
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.tap.v3.Tap
              common_config:
                admin_config: {config_id: web-tap}
`

// withTapFilter adds tapFilterYAML to a sidecar's bootstrap.
func withTapFilter(config string) string {
	const router = "          - name: envoy.filters.http.router\n"
	Expect(config).To(ContainSubstring(router))
	return strings.Replace(config, router, tapFilterYAML+router, 1)
}

// startPluginProxy starts a sidecar with the suite's bootstrap plus the
// backend cluster (and whatever edits change), and a pod for it whose
// port-forwards reach it.
func startPluginProxy(ctx SpecContext, pf *pluginFixture, ns, name, app string, edits ...func(string) string) *proxy {
	GinkgoHelper()
	p := newProxy(feats.healthCheckFilter)
	raw, err := os.ReadFile(p.config)
	Expect(err).NotTo(HaveOccurred())
	config := string(raw) + fmt.Sprintf(pluginClusterYAML, p.ip, p.listenPort)
	for _, edit := range edits {
		config = edit(config)
	}
	Expect(os.WriteFile(p.config, []byte(config), 0o644)).To(Succeed())
	p.start()
	DeferCleanup(p.stop)
	createPod(ctx, ns, name, app, p)
	pf.forwardTo(ns, name, p.ip)
	return p
}

// tapProbe sends one request through the sidecar's listener with the
// x-tap-probe header set to value.
func tapProbe(p *proxy, value string) {
	GinkgoHelper()
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://%s/probe", net.JoinHostPort(p.ip, strconv.Itoa(p.listenPort))), nil)
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("x-tap-probe", value)
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Do(req)
	Expect(err).NotTo(HaveOccurred())
	_, _ = io.Copy(io.Discard, resp.Body)
	Expect(resp.Body.Close()).To(Succeed())
	Expect(resp.StatusCode).To(Equal(http.StatusOK))
}

// tapTrace is the part of an http_buffered_trace the specs look at.
type tapTrace struct {
	Trace struct {
		Request struct {
			Headers []struct{ Key, Value string } `json:"headers"`
		} `json:"request"`
		Response struct {
			Headers []struct{ Key, Value string } `json:"headers"`
			Body    struct {
				AsBytes  []byte `json:"as_bytes"`
				AsString string `json:"as_string"`
			} `json:"body"`
		} `json:"response"`
	} `json:"http_buffered_trace"`
}

// header is the value of the named header in a trace's header list.
func header(headers []struct{ Key, Value string }, name string) string {
	for _, h := range headers {
		if h.Key == name {
			return h.Value
		}
	}
	return ""
}

// statLines are the lines of a /stats text listing.
func statLines(out string) []string {
	return strings.Split(strings.TrimRight(out, "\n"), "\n")
}

// loggerLevels reads the sidecar's loggers from its own /logging.
func loggerLevels(p *proxy) map[string]string {
	GinkgoHelper()
	body, code, err := p.admin(http.MethodPost, "/logging")
	Expect(err).NotTo(HaveOccurred())
	Expect(code).To(Equal(http.StatusOK))
	levels, err := adminclient.ParseLoggers([]byte(body))
	Expect(err).NotTo(HaveOccurred())
	return levels
}

// tableRow finds the row of a table whose first cell is key and returns
// its cells (split on runs of 3+ spaces, the table's column gap).
func tableRow(out, key string) []string {
	GinkgoHelper()
	gap := regexp.MustCompile(`\s{3,}`)
	for _, line := range strings.Split(out, "\n") {
		cells := gap.Split(strings.TrimSpace(line), -1)
		if cells[0] == key {
			return cells
		}
	}
	Fail(fmt.Sprintf("no row %q in:\n%s", key, out))
	return nil
}

var _ = Describe("kubectl-outrigger", Ordered, ContinueOnFailure, func() {
	var pf *pluginFixture
	BeforeAll(func(ctx SpecContext) {
		pf = startPluginFixture(ctx)
	})

	It("shows proxy-config tables, and /config_dump sections with -o json and -o yaml, through a port-forward", func(ctx SpecContext) {
		ns := cluster.namespace(ctx)
		p := startPluginProxy(ctx, pf, ns, "web-0", "web")
		streams := pf.forwarder.Streams()

		out := pf.ok(ns, "proxy-config", "listeners", "web-0")
		Expect(out).To(HavePrefix("NAME"))
		row := tableRow(out, "ingress")
		Expect(row[1:6]).To(Equal([]string{net.JoinHostPort(p.ip, strconv.Itoa(p.listenPort)), "INBOUND", "1", "http_connection_manager", "static"}))
		Expect(pf.forwarder.Streams()).To(BeNumerically(">", streams), "the admin call did not go through the port-forward")

		out = pf.ok(ns, "proxy-config", "clusters", "web-0")
		Expect(tableRow(out, "backend")[1:5]).To(Equal([]string{"STATIC", "ROUND_ROBIN", "1", "static"}))

		out = pf.ok(ns, "proxy-config", "routes", "web-0")
		Expect(out).To(MatchRegexp(`(?m)^-?\s*all\s+\*\s+prefix /\s+direct_response 200\s+static`))

		out = pf.ok(ns, "proxy-config", "endpoints", "web-0")
		row = tableRow(out, net.JoinHostPort(p.ip, strconv.Itoa(p.listenPort)))
		Expect(row[1:3]).To(Equal([]string{"backend", "HEALTHY"}))

		out = pf.ok(ns, "proxy-config", "bootstrap", "web-0")
		Expect(tableRow(out, "admin.address")[1]).To(Equal(net.JoinHostPort(p.ip, strconv.Itoa(p.adminPort))))
		Expect(tableRow(out, "layered_runtime.layers")[1]).To(Equal("static,admin"))

		out = pf.ok(ns, "proxy-config", "secrets", "web-0")
		Expect(strings.Fields(out)).To(Equal([]string{"NAME", "KIND", "SOURCE", "VERSION", "LAST", "UPDATED"}))

		// -o json is the section of the proxy's own /config_dump.
		var section struct {
			Type   string `json:"@type"`
			Static []struct {
				Cluster struct {
					Name string `json:"name"`
				} `json:"cluster"`
			} `json:"static_clusters"`
		}
		Expect(json.Unmarshal([]byte(pf.ok(ns, "proxy-config", "clusters", "web-0", "-o", "json")), &section)).To(Succeed())
		Expect(section.Type).To(Equal("type.googleapis.com/envoy.admin.v3.ClustersConfigDump"))
		Expect(section.Static).To(HaveLen(1))
		Expect(section.Static[0].Cluster.Name).To(Equal("backend"))
		dump, _, err := p.admin(http.MethodGet, "/config_dump")
		Expect(err).NotTo(HaveOccurred())
		var whole struct {
			Configs []json.RawMessage `json:"configs"`
		}
		Expect(json.Unmarshal([]byte(dump), &whole)).To(Succeed())
		listeners := pf.ok(ns, "proxy-config", "listeners", "web-0", "-o", "json")
		Expect(whole.Configs).To(ContainElement(MatchJSON(listeners)))

		Expect(pf.ok(ns, "proxy-config", "endpoints", "web-0", "-o", "yaml")).To(ContainSubstring("'@type': type.googleapis.com/envoy.admin.v3.EndpointsConfigDump"))
	})

	It("reaches the pod IP with --transport direct", func(ctx SpecContext) {
		ns := cluster.namespace(ctx)
		startPluginProxy(ctx, pf, ns, "web-0", "web")
		streams := pf.forwarder.Streams()
		out := pf.ok(ns, "--transport", "direct", "proxy-config", "clusters", "web-0")
		Expect(tableRow(out, "backend")[1]).To(Equal("STATIC"))
		Expect(pf.forwarder.Streams()).To(Equal(streams), "the direct transport went through the port-forward")
	})

	It("prints the stats that --filter selects", func(ctx SpecContext) {
		ns := cluster.namespace(ctx)
		startPluginProxy(ctx, pf, ns, "web-0", "web")
		lines := statLines(pf.ok(ns, "stats", "web-0", "--filter", `^cluster\.backend\.upstream_cx_`))
		Expect(lines).NotTo(BeEmpty())
		for _, l := range lines {
			Expect(l).To(MatchRegexp(`^cluster\.backend\.upstream_cx_[a-z0-9_]+: `))
		}
		Expect(lines).To(ContainElement(HavePrefix("cluster.backend.upstream_cx_total: ")))
		Expect(pf.ok(ns, "stats", "web-0")).To(ContainSubstring("server.live: 1"))
	})

	It("lists and sets log levels, which the proxy's /logging then reports", func(ctx SpecContext) {
		ns := cluster.namespace(ctx)
		p := startPluginProxy(ctx, pf, ns, "web-0", "web")
		out := pf.ok(ns, "log", "web-0")
		Expect(tableRow(out, "http")[1]).To(Equal("warning"))

		out = pf.ok(ns, "log", "web-0", "--level", "debug")
		Expect(tableRow(out, "upstream")[1]).To(Equal("debug"))
		for name, level := range loggerLevels(p) {
			Expect(level).To(Equal("debug"), "logger %s", name)
		}

		out = pf.ok(ns, "log", "web-0", "http=trace", "upstream=error")
		Expect(strings.Count(out, "\n")).To(Equal(3), "the header and the two loggers changed")
		levels := loggerLevels(p)
		Expect(levels["http"]).To(Equal("trace"))
		Expect(levels["upstream"]).To(Equal("error"))
		Expect(levels["admin"]).To(Equal("debug"))

		r := pf.run(ns, "log", "web-0", "http=loud")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(ContainSubstring("the proxy refused POST /logging: 400"))
		Expect(loggerLevels(p)["http"]).To(Equal("trace"))
	})

	It("drains the listeners, which then refuse connections", func(ctx SpecContext) {
		need(feats.drainListeners, "/drain_listeners")
		ns := cluster.namespace(ctx)
		p := startPluginProxy(ctx, pf, ns, "web-0", "web")
		Expect(p.listenerRefuses()).To(BeFalse())
		Expect(pf.ok(ns, "drain", "web-0", "--inbound-only")).To(Equal(fmt.Sprintf("pod %s/web-0: draining listeners (inbound only)\n", ns)))
		Eventually(p.listenerRefuses).WithTimeout(10 * time.Second).Should(BeTrue())
		Eventually(func() int { return p.adminCalls("POST", "/drain_listeners?inboundonly") }).WithTimeout(2 * time.Second).Should(Equal(1))
		stats := pf.ok(ns, "stats", "web-0", "--filter", `^listener_manager\.listener_stopped$`)
		Expect(stats).To(Equal("listener_manager.listener_stopped: 1\n"))
		Expect(tableRow(pf.ok(ns, "status"), "web-0")[6]).To(Equal("listeners stopped: 1"))
	})

	It("shows the runtime, and sets keys that /runtime then reports", func(ctx SpecContext) {
		ns := cluster.namespace(ctx)
		p := startPluginProxy(ctx, pf, ns, "web-0", "web")
		out := pf.ok(ns, "runtime", "web-0")
		Expect(tableRow(out, "KEY")).To(Equal([]string{"KEY", "VALUE", "LAYER STATIC", "LAYER ADMIN"}))
		Expect(tableRow(out, "existing.key")).To(Equal([]string{"existing.key", "static", "static", "-"}))

		out = pf.ok(ns, "runtime", "web-0", "new.key=42", "existing.key=admin")
		Expect(tableRow(out, "new.key")).To(Equal([]string{"new.key", "42", "-", "42"}))
		Expect(tableRow(out, "existing.key")).To(Equal([]string{"existing.key", "admin", "static", "admin"}))
		Expect(p.runtimeValue("new.key")).To(Equal("42"))
		Expect(p.runtimeValue("existing.key")).To(Equal("admin"))

		out = pf.ok(ns, "runtime", "web-0", "existing.key=")
		Expect(tableRow(out, "existing.key")).To(Equal([]string{"existing.key", "static", "static", "-"}))
		Expect(p.runtimeValue("existing.key")).To(Equal("static"))
	})

	It("lists the injected pods with their proxy's state and the last drain recorded", func(ctx SpecContext) {
		need(feats.drainListeners, "/drain_listeners")
		ns := cluster.namespace(ctx)
		startPluginProxy(ctx, pf, ns, "web-0", "web")
		startPluginProxy(ctx, pf, ns, "api-0", "api")
		// A pod without the proxy container is not listed; a pending one
		// with it is, without admin calls.
		Expect(cluster.c.Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: ns},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example/app"}}},
		})).To(Succeed())
		Expect(cluster.c.Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "pending", Namespace: ns},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example/app"}, {Name: "proxy", Image: "outrigger/sidecar"}}},
		})).To(Succeed())

		d := newDrain(ns, "drain-api", "api", 5*time.Second)
		d.Spec.FailHealthChecks = true
		Expect(cluster.c.Create(ctx, d)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(cluster.c.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
			g.Expect(d.Status.Targets).To(HaveLen(1))
			g.Expect(d.Status.Targets[0].Phase).To(Equal(v1alpha1.PhaseDrained))
		}).WithTimeout(30 * time.Second).Should(Succeed())

		out := pf.ok(ns, "status")
		Expect(tableRow(out, "POD")).To(Equal([]string{"POD", "VERSION", "STATE", "READY", "UPTIME", "CONFIG AGE", "LAST DRAIN"}))
		Expect(strings.Count(out, "\n")).To(Equal(4), "the header and three pods")
		Expect(out).NotTo(ContainSubstring("plain"))
		web := tableRow(out, "web-0")
		Expect(web[1]).To(MatchRegexp(`^\S+ \([0-9a-f]{7}\)$|^\S+ \(unknown\)$`))
		Expect(web[2:4]).To(Equal([]string{"LIVE", "true"}))
		Expect(web[4]).To(MatchRegexp(`^\d+s$`))
		Expect(web[5]).To(MatchRegexp(`^\d+s$`))
		Expect(web[6]).To(Equal("-"))
		api := tableRow(out, "api-0")
		Expect(api[2:4]).To(Equal([]string{"DRAINING", "false"}))
		Expect(api[6]).To(MatchRegexp(`^drain-api \d+s ago \(Done\)$`))
		Expect(tableRow(out, "pending")[1:]).To(Equal([]string{"-", "pod Pending", "-", "-", "-", "-"}))

		// Every namespace: pods of other specs whose sidecars have stopped
		// may be listed as unreachable (and fail the command); this
		// namespace's rows are as above.
		all := pf.run("", "status", "-A")
		Expect(all.stdout).To(HavePrefix("NAMESPACE "))
		Expect(all.stdout).To(MatchRegexp(`(?m)^%s\s+api-0\s+\S+ \(\S+\)\s+DRAINING\s+false\s`, ns))
		Expect(all.stdout).To(MatchRegexp(`(?m)^%s\s+web-0\s+\S+ \(\S+\)\s+LIVE\s+true\s`, ns))
		Expect(all.stderr).NotTo(ContainSubstring(ns))
	})

	It("streams the traces of a tap filter with admin_config, and says why the proxy refuses a tap", func(ctx SpecContext) {
		ns := cluster.namespace(ctx)
		p := startPluginProxy(ctx, pf, ns, "web-0", "web", withTapFilter)
		streams := pf.forwarder.Streams()

		// The session is attached a moment after the command starts:
		// requests flow until their traces come out.
		tap := pf.start(ns, "tap", "web-0", "--config-id", "web-tap")
		n := 0
		Eventually(func() string {
			if tap.exited() {
				StopTrying("the tap ended: " + tap.stderr.String()).Now()
			}
			n++
			tapProbe(p, "probe-"+strconv.Itoa(n))
			return tap.stdout.String()
		}).WithTimeout(20 * time.Second).WithPolling(100 * time.Millisecond).Should(ContainSubstring(`"x-tap-probe"`))
		Expect(pf.forwarder.Streams()).To(BeNumerically(">", streams), "the tap did not go through the port-forward")

		// One session at a time, as Envoy: the proxy's 400 is the error.
		r := pf.run(ns, "tap", "web-0", "--config-id", "web-tap")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(Equal(fmt.Sprintf("error: pod %s/web-0: the proxy refused POST /tap: 400: An attached /tap admin stream already exists. Detach it.\n", ns)))

		// ^C ends the stream cleanly; every trace is a whole JSON document.
		Expect(tap.interrupt()).To(Equal(0))
		dec := json.NewDecoder(strings.NewReader(tap.stdout.String()))
		var traces []tapTrace
		for dec.More() {
			var t tapTrace
			Expect(dec.Decode(&t)).To(Succeed())
			traces = append(traces, t)
		}
		Expect(traces).NotTo(BeEmpty())
		for _, t := range traces {
			Expect(header(t.Trace.Request.Headers, "x-tap-probe")).To(MatchRegexp(`^probe-\d+$`))
			Expect(header(t.Trace.Request.Headers, ":path")).To(Equal("/probe"))
			Expect(header(t.Trace.Response.Headers, ":status")).To(Equal("200"))
			Expect(string(t.Trace.Response.Body.AsBytes)).To(Equal("hello"))
		}

		// The session is gone once the proxy sees the stream closed; an
		// unknown config id is then the proxy's refusal.
		Eventually(func() string {
			return pf.run(ns, "tap", "web-0", "--config-id", "nope").stderr
		}).WithTimeout(10 * time.Second).Should(Equal(fmt.Sprintf("error: pod %s/web-0: the proxy refused POST /tap: 400: Unknown config id 'nope'. No extension has registered with this id.\n", ns)))

		// A tap request from a file: only the matching requests, bodies
		// as strings, in YAML, and the command ends after --count traces.
		file := filepath.Join(GinkgoT().TempDir(), "tap.yaml")
		Expect(os.WriteFile(file, []byte(`config_id: web-tap
tap_config:
  match:
    http_request_headers_match:
      headers: [{name: x-tap-probe, string_match: {exact: "yes"}}]
  output_config:
    sinks: [{format: JSON_BODY_AS_STRING, streaming_admin: {}}]
`), 0o644)).To(Succeed())
		tap = pf.start(ns, "tap", "web-0", "-f", file, "--count", "1", "-o", "yaml")
		Eventually(func() bool {
			tapProbe(p, "no")
			tapProbe(p, "yes")
			return tap.exited()
		}).WithTimeout(20*time.Second).WithPolling(100*time.Millisecond).Should(BeTrue(), "the tap did not end after one trace: %s", tap.stderr.String())
		Expect(tap.wait()).To(Equal(0))
		out := tap.stdout.String()
		Expect(out).To(HavePrefix("---\n"))
		Expect(strings.Count(out, "---\n")).To(Equal(1))
		var t tapTrace
		Expect(yaml.Unmarshal([]byte(out), &t)).To(Succeed())
		Expect(header(t.Trace.Request.Headers, "x-tap-probe")).To(Equal("yes"))
		Expect(t.Trace.Response.Body.AsString).To(Equal("hello"))
	})

	It("says so when a pod has no proxy, its admin cannot be reached, or the command is unknown", func(ctx SpecContext) {
		ns := cluster.namespace(ctx)
		Expect(cluster.c.Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: ns},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example/app"}}},
		})).To(Succeed())
		r := pf.run(ns, "stats", "plain")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(ContainSubstring(fmt.Sprintf(`error: pod %s/plain has no proxy: no container "proxy"`, ns)))

		// A pod whose annotation names a port nothing listens on.
		p := startProxy()
		pod := createPod(ctx, ns, "wrong-port", "x", p)
		pod.Annotations[v1alpha1.AdminPortAnnotation] = strconv.Itoa(freePort(p.ip))
		Expect(cluster.c.Update(ctx, pod)).To(Succeed())
		pf.forwardTo(ns, "wrong-port", p.ip)
		for _, transport := range []string{"portforward", "direct"} {
			r = pf.run(ns, "--transport", transport, "proxy-config", "clusters", "wrong-port")
			Expect(r.code).To(Equal(1))
			Expect(r.stderr).To(ContainSubstring(fmt.Sprintf("cannot reach the admin interface of pod %s/wrong-port on port %s", ns, pod.Annotations[v1alpha1.AdminPortAnnotation])))
		}
		r = pf.run(ns, "status")
		Expect(r.code).To(Equal(1))
		Expect(tableRow(r.stdout, "wrong-port")[1:3]).To(Equal([]string{"-", "unreachable"}))
		Expect(r.stderr).To(HavePrefix(fmt.Sprintf("error: cannot reach the admin interface of pod %s/wrong-port", ns)))

		r = pf.run(ns, "stats", "missing")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(Equal(fmt.Sprintf("error: pod %s/missing not found\n", ns)))
		// Without -n, the context's namespace.
		r = pf.run("", "stats", "plain")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(Equal("error: pod not-this-one/plain not found\n"))

		r = pf.run(ns, "proxy-stats", "web-0")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(Equal(`error: unknown command "proxy-stats"; valid commands: drain, log, proxy-config, runtime, stats, status, tap, version` + "\n"))
		r = pf.run(ns, "proxy-config", "hosts", "web-0")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(ContainSubstring("valid kinds: clusters, listeners, routes, endpoints, secrets, bootstrap"))

		pf.forwardTo(ns, "web-0", p.ip)
		createPod(ctx, ns, "web-0", "web", p)
		r = pf.run(ns, "tap", "web-0", "--config-id", "tap-1")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(ContainSubstring("has no /tap admin endpoint: its configuration has no tap filter (envoy.filters.http.tap) with admin_config"))
	})
})
