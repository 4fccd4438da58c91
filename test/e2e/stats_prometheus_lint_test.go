package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/outrigger-dev/outrigger/pkg/controller/inject"
)

// envoyLintProblems are the promlint problems that Envoy's own stat names
// cause, which Outrigger keeps because dashboards and alerts are written
// against those names (docs/stats.md lists them with the reasons). Every
// other problem, a missing HELP line first of all, fails the spec.
var envoyLintProblems = []string{
	`counter metrics should have "_total" suffix`,
	"metric names should not contain abbreviated units",
	`use base unit "seconds" instead of "days"`,
	`non-counter metrics should not have "_total" suffix`,
}

// promScenario is a sidecar that has carried real traffic: HTTP requests
// through a connection manager to an upstream cluster with circuit
// breakers (answers 200 and local 503s), and over HTTP/2 on both sides to
// another, through the health_check, fault,
// local_ratelimit, cors and compressor filters and a virtual cluster, a TCP
// connection through tcp_proxy, an access log and an overload manager; its
// listener discovery file rejected one update.
type promScenario struct {
	s        *Sidecar
	httpPort int
	tcpPort  int
}

func startPromScenario(naming string) promScenario {
	GinkgoHelper()
	up := startUpstream(false)
	h2up := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }), true)
	sc := promScenario{httpPort: freePort(), tcpPort: freePort()}
	ldsDir := ldsSetup(ldsResponse("1"))
	ldsFile, err := yamlQuote(filepath.Join(ldsDir, ldsFileName))
	Expect(err).NotTo(HaveOccurred())
	spec := proxySpec{
		Top: `{dynamic_resources: {lds_config: {resource_api_version: V3, path_config_source: {path: ` + ldsFile + `}}},
			overload_manager: ` + connOverload(1000, "") + `}`,
		Filters: "[" + strings.Join([]string{
			httpFilter("envoy.filters.http.health_check", "type.googleapis.com/envoy.extensions.filters.http.health_check.v3.HealthCheck",
				`{pass_through_mode: false, headers: [{name: ":path", string_match: {exact: /healthz}}]}`),
			httpFilter("envoy.filters.http.fault", "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault",
				`{abort: {http_status: 503, percentage: {numerator: 0}}}`),
			httpFilter("envoy.filters.http.local_ratelimit", "type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit",
				`{stat_prefix: edge_rl, token_bucket: {max_tokens: 1000, tokens_per_fill: 1000, fill_interval: 60s},
				filter_enabled: {default_value: {numerator: 100}}, filter_enforced: {default_value: {numerator: 100}}}`),
			httpFilter("envoy.filters.http.cors", "type.googleapis.com/envoy.extensions.filters.http.cors.v3.Cors", ""),
			httpFilter("envoy.filters.http.compressor", "type.googleapis.com/envoy.extensions.filters.http.compressor.v3.Compressor",
				`{compressor_library: {name: text, typed_config: `+withType("type.googleapis.com/envoy.extensions.compression.gzip.compressor.v3.Gzip", "")+`}}`),
		}, ", ") + "]",
		VirtualHost: `{virtual_clusters: [{name: gets, headers: [{name: ":method", string_match: {exact: GET}}]}]}`,
		Port:        sc.httpPort,
		HCM:         `{access_log: [` + stdoutLog("%RESPONSE_CODE%\n") + `]}`,
		Routes: `[{match: {prefix: /fail}, direct_response: {status: 503}}, {match: {prefix: /h2}, route: {cluster: h2up}},
			{match: {prefix: /}, route: {cluster: web}}]`,
		Clusters: []proxyCluster{{Name: "web", Port: up.port,
			Extra: `{circuit_breakers: {thresholds: [{max_requests: 100}]}, outlier_detection: {}}`},
			{Name: "h2up", Port: portNum(h2up), Extra: h2cOptions()}},
		More: []proxySpec{{Port: sc.tcpPort, Routes: "[]", Listener: `{name: tcp, filter_chains: [{filters: [{name: envoy.filters.network.tcp_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: front, cluster: web}}]}]}`}},
	}
	sc.s = Launch(newDir(), "bootstrap.yaml", spec.YAML(), "--prometheus-naming", naming)
	sc.s.WaitForAdmin()
	sc.s.WaitLive()
	replaceLDS(ldsDir, "resources: [{\"@type\": type.googleapis.com/envoy.config.listener.v3.Listener, name: bad}]\n")
	Eventually(func() string { return sc.s.Get("/stats?filter=^listener_manager.lds.update_rejected$").Body }).
		Should(ContainSubstring("listener_manager.lds.update_rejected: 1"))

	for i := range 10 {
		path, want := "/ok", 200
		if i%5 == 0 {
			path, want = "/fail", 503
		}
		r := httpDo(sc.s.client, "GET", listenerURL(sc.httpPort, path), nil, nil)
		Expect(r.Status).To(Equal(want))
	}
	Expect(httpDo(sc.s.client, "GET", listenerURL(sc.httpPort, "/healthz"), nil, nil).Status).To(Equal(200))
	// HTTP/2 on both sides: prior-knowledge h2c downstream and upstream.
	Expect(httpDo(httpClients()["HTTP/2"], "GET", listenerURL(sc.httpPort, "/h2"), nil, nil).Status).To(Equal(200))
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", sc.tcpPort), 5*time.Second)
	Expect(err).NotTo(HaveOccurred())
	Expect(conn.SetDeadline(time.Now().Add(10 * time.Second))).To(Succeed())
	_, err = conn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"))
	Expect(err).NotTo(HaveOccurred())
	status, err := bufio.NewReader(conn).ReadString('\n')
	Expect(err).NotTo(HaveOccurred())
	Expect(status).To(HavePrefix("HTTP/1.1 200"))
	Expect(conn.Close()).To(Succeed())
	// The tcp_proxy's stats move when the proxy sees the close.
	Eventually(func() string { return sc.s.Get("/stats?filter=^tcp.front.downstream_cx_total$").Body }).
		Should(ContainSubstring("tcp.front.downstream_cx_total: 1"))
	return sc
}

// scrape reads a Prometheus render, checks that prometheus/common's text
// parser reads it, and returns it with its families.
func (sc promScenario) scrape(path string) (string, map[string]*dto.MetricFamily) {
	GinkgoHelper()
	r := sc.s.Get(path)
	Expect(r.Status).To(Equal(200))
	Expect(r.Header.Get("Content-Type")).To(Equal("text/plain; version=0.0.4; charset=utf-8"))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(r.Body))
	Expect(err).NotTo(HaveOccurred(), r.Body)
	return r.Body, families
}

// labelValues returns the values of label name in family f.
func labelValues(f *dto.MetricFamily, name string) []string {
	var vs []string
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == name && !slices.Contains(vs, l.GetValue()) {
				vs = append(vs, l.GetValue())
			}
		}
	}
	return vs
}

// monitoringNames are the metric and label names that the chart's
// dashboard and alerts query (charts/outrigger/monitoring, written in the
// proxy naming), in naming.
func monitoringNames(naming string) []string {
	GinkgoHelper()
	var names []string
	for _, f := range []string{"dashboard.json", "rules.yaml"} {
		text := readFile(filepath.Join("..", "..", "charts", "outrigger", "monitoring", f))
		if naming == "envoy" {
			// What the chart's outrigger.monitoringFile does.
			text = strings.ReplaceAll(text, "proxy_", "envoy_")
		}
		names = append(names, regexp.MustCompile(`\b`+naming+`_[a-z0-9_]+`).FindAllString(text, -1)...)
	}
	Expect(len(names)).To(BeNumerically(">", 20))
	return names
}

// checkMonitoringNames checks that every name the chart's dashboard and
// alerts query is a family (or a histogram's series) or a label of the
// sidecar's output.
func checkMonitoringNames(naming string, families map[string]*dto.MetricFamily) {
	GinkgoHelper()
	labels := map[string]bool{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = true
			}
		}
	}
	for _, name := range monitoringNames(naming) {
		if families[name] != nil || labels[name] {
			continue
		}
		base := name
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			base = strings.TrimSuffix(base, suffix)
		}
		f := families[base]
		Expect(f).NotTo(BeNil(), "the chart queries %s, which the sidecar does not emit", name)
		Expect(f.GetType()).To(Equal(dto.MetricType_HISTOGRAM), "the chart queries %s", name)
	}
}

var _ = Describe("Prometheus output in both namings", func() {
	DescribeTable("passes promlint but for Envoy's own names, with a HELP line for every family, and has every name the chart's dashboard and alerts query",
		func(naming string) {
			sc := startPromScenario(naming)
			for _, path := range []string{"/stats/prometheus", "/stats?format=prometheus"} {
				body, families := sc.scrape(path)
				Expect(len(families)).To(BeNumerically(">", 100), body)

				problems, err := promlint.New(strings.NewReader(body)).Lint()
				Expect(err).NotTo(HaveOccurred())
				var unexpected []string
				tally := map[string]int{}
				for _, p := range problems {
					tally[p.Text]++
					if !slices.Contains(envoyLintProblems, p.Text) {
						unexpected = append(unexpected, p.Metric+": "+p.Text)
					}
				}
				GinkgoWriter.Printf("%s: %d families, promlint: %v\n", path, len(families), tally)
				Expect(unexpected).To(BeEmpty(), "promlint problems other than Envoy's naming habits")

				other := map[string]string{"proxy": "envoy", "envoy": "proxy"}[naming]
				for name, f := range families {
					Expect(name).To(HavePrefix(naming+"_"), "family %s", name)
					Expect(f.GetHelp()).NotTo(BeEmpty(), "family %s has no HELP", name)
					for _, m := range f.GetMetric() {
						for _, l := range m.GetLabel() {
							Expect(l.GetName()).NotTo(HavePrefix(other+"_"), "family %s", name)
						}
					}
				}
				Expect(strings.Count(body, "# HELP "+naming+"_cluster_upstream_rq_total ")).To(Equal(1))

				p := naming + "_"
				Expect(labelValues(families[p+"cluster_upstream_rq_total"], p+"cluster_name")).To(ContainElement("web"))
				Expect(labelValues(families[p+"cluster_upstream_rq"], p+"response_code")).To(ContainElement("200"))
				Expect(labelValues(families[p+"http_downstream_rq_xx"], p+"response_code_class")).To(ContainElements("2", "5"))
				Expect(labelValues(families[p+"http_downstream_rq_xx"], p+"http_conn_manager_prefix")).To(ContainElement("l"))
				Expect(labelValues(families[p+"listener_downstream_cx_total"], p+"listener_address")).
					To(ContainElement(fmt.Sprintf("127.0.0.1_%d", sc.httpPort)))
				Expect(labelValues(families[p+"tcp_downstream_cx_total"], p+"tcp_prefix")).To(ContainElement("front"))
				Expect(families).To(HaveKey(p + "server_" + naming + "_bug_failures"))
				Expect(families[p+"cluster_upstream_rq_time"].GetType()).To(Equal(dto.MetricType_HISTOGRAM))
				checkMonitoringNames(naming, families)
			}
		},
		Entry("proxy naming (the default)", "proxy"),
		Entry("envoy naming", "envoy"),
	)

	It("reaches the injected bootstrap's probe listener in the envoy naming", func() {
		admin, probe := freePort(), freePort()
		Expect(probe).NotTo(Equal(admin))
		config := strings.Replace(inject.DefaultBootstrap(int32(admin), int32(probe)),
			"address: 0.0.0.0,", "address: 127.0.0.1,", 1)
		s := Launch(newDir(), "", "", "--config-yaml", config, "--prometheus-naming", "envoy")
		s.WaitForAdmin()
		s.WaitLive()
		r := httpDo(s.client, "GET", listenerURL(probe, "/stats/prometheus"), nil, nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(ContainSubstring("# HELP envoy_server_live 1 while the server is live"))
		Expect(r.Body).To(ContainSubstring("\nenvoy_server_live{} 1\n"))
		Expect(r.Body).To(MatchRegexp(`\nenvoy_http_downstream_rq_total\{envoy_http_conn_manager_prefix="probe"\} [1-9]`))
		Expect(r.Body).NotTo(ContainSubstring("proxy_"))
	})
})
