package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// specQuantiles are the admin specification's supported quantiles (×100),
// in order: the same list in the text and the JSON forms of /stats.
var specQuantiles = []string{"0", "25", "50", "75", "90", "95", "99", "99.9", "100"}

// quantileLabel matches one "P<q>(" of a text histogram summary.
var quantileLabel = regexp.MustCompile(`P([0-9.]+)\(`)

var _ = Describe("the remaining admin specification behaviours", func() {
	It("reports the specification's quantiles, the same in text and JSON", func() {
		s := Start(newDir(), Bootstrap{}.YAML())

		// The admin's own connections feed http.admin.downstream_cx_length_ms;
		// the first flush (5 s by default) makes its summary printable.
		var line string
		Eventually(func() string {
			for _, l := range strings.Split(s.Get("/stats?type=Histograms").Body, "\n") {
				if strings.Contains(l, " P0(") {
					line = l
					return l
				}
			}
			return ""
		}, 20*time.Second, 250*time.Millisecond).ShouldNot(BeEmpty(), "no histogram summary after a flush")
		var labels []string
		for _, m := range quantileLabel.FindAllStringSubmatch(line, -1) {
			labels = append(labels, m[1])
		}
		Expect(labels).To(Equal(specQuantiles), line)

		var doc struct {
			Stats []struct {
				Histograms *struct {
					SupportedQuantiles []json.Number `json:"supported_quantiles"`
					ComputedQuantiles  []struct {
						Name   string            `json:"name"`
						Values []json.RawMessage `json:"values"`
					} `json:"computed_quantiles"`
				} `json:"histograms"`
			} `json:"stats"`
		}
		dec := json.NewDecoder(strings.NewReader(s.Get("/stats?format=json").Body))
		dec.UseNumber()
		Expect(dec.Decode(&doc)).To(Succeed())
		found := false
		for _, st := range doc.Stats {
			if st.Histograms == nil {
				continue
			}
			found = true
			var got []string
			for _, q := range st.Histograms.SupportedQuantiles {
				got = append(got, q.String())
			}
			Expect(got).To(Equal(specQuantiles))
			Expect(st.Histograms.ComputedQuantiles).NotTo(BeEmpty())
			for _, c := range st.Histograms.ComputedQuantiles {
				Expect(c.Values).To(HaveLen(len(specQuantiles)), c.Name)
			}
		}
		Expect(found).To(BeTrue(), "no histograms element")
	})

	It("lists hot_restart_version among command_line_options, as a boolean", func() {
		s := Start(newDir(), Bootstrap{}.YAML())
		var info struct {
			Options map[string]any `json:"command_line_options"`
		}
		Expect(json.Unmarshal([]byte(s.Get("/server_info").Body), &info)).To(Succeed())
		Expect(info.Options).To(HaveKeyWithValue("hot_restart_version", false))
		// The specification's members, with their JSON types and defaults.
		for k, v := range map[string]any{
			"base_id": "0", "config_yaml": "", "allow_unknown_static_fields": false,
			"admin_address_path": s.AddressPath, "local_address_ip_version": "v4",
			"log_level": "info", "component_log_level": "", "log_path": "",
			"service_cluster": "", "service_node": "", "service_zone": "", "mode": "Serve",
			"disable_hot_restart": false, "enable_mutex_tracing": false, "restart_epoch": float64(0),
			"file_flush_interval": "10s", "drain_time": "600s", "parent_shutdown_time": "900s",
			"cpuset_threads": false, "config_path": s.ConfigPath,
		} {
			Expect(info.Options).To(HaveKeyWithValue(k, v), k)
		}
		Expect(info.Options["concurrency"]).To(BeNumerically(">=", 1))
		Expect(info.Options["log_format"]).To(BeAssignableToTypeOf(""))
	})

	It("logs connections, routing, host choice and admin requests at debug, per component level", func() {
		up := lbUpstream("up")
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port:     port,
			Clusters: []proxyCluster{{Name: "up", Port: up}},
		}.YAML(), "-l", "info", "--component-log-level", "router:debug")

		Expect(get(port, "/first", nil)).To(Equal(200))
		Eventually(s.Stderr, 10*time.Second).Should(And(
			ContainSubstring("[debug][router]"),
			ContainSubstring("cluster 'up' match for URL '/first'"),
			ContainSubstring(fmt.Sprintf("upstream host 127.0.0.1:%d selected", up)),
		))
		Expect(s.Stderr()).NotTo(ContainSubstring("[debug][conn_handler]"), "conn_handler is still at info")
		Expect(s.Stderr()).NotTo(ContainSubstring("[debug][admin]"))

		Expect(s.Post("/logging?conn_handler=debug").Status).To(Equal(200))
		Expect(getOnNewConnection(port, "/second")).To(Equal(200))
		Eventually(s.Stderr, 10*time.Second).Should(And(
			MatchRegexp(`\[debug\]\[conn_handler\] .*new connection from 127\.0\.0\.1:\d+`),
			MatchRegexp(`\[debug\]\[conn_handler\] .*connection closed`),
		))

		Expect(s.Post("/logging?level=debug").Status).To(Equal(200))
		Expect(s.Get("/ready").Status).To(Equal(200))
		Eventually(s.Stderr, 10*time.Second).Should(ContainSubstring("request complete: path: /ready"))
		Expect(getOnNewConnection(port, "/fourth")).To(Equal(200))
		Eventually(s.Stderr, 10*time.Second).Should(MatchRegexp(`\[debug\]\[http\] .*request headers complete method=GET path=/fourth`))

		Expect(s.Post("/logging?router=info").Status).To(Equal(200))
		Expect(getOnNewConnection(port, "/fifth")).To(Equal(200))
		Consistently(s.Stderr, time.Second).ShouldNot(ContainSubstring("URL '/fifth'"), "router back at info")
	})

	It("reopens the log file and the access logs at their paths after they were moved away", func() {
		dir := newDir()
		appLog, accessLog := filepath.Join(dir, "app.log"), filepath.Join(dir, "access.log")
		up := lbUpstream("up")
		port := freePort()
		s := Start(dir, proxySpec{
			Port: port,
			HCM: fmt.Sprintf(`{access_log: [{name: envoy.access_loggers.file, typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog,
				path: %q, log_format: {text_format_source: {inline_string: "AL %%REQ(:PATH)%%\n"}}}}]}`, accessLog),
			Clusters: []proxyCluster{{Name: "up", Port: up}},
		}.YAML(), "-l", "debug", "--log-path", appLog, "--file-flush-interval-msec", "50")
		// Configuration loading at debug level.
		Eventually(func() string { return readFile(appLog) }, 10*time.Second).Should(And(
			MatchRegexp(`\[debug\]\[upstream\] .*cm init: adding: cluster=up`),
			MatchRegexp(`\[debug\]\[config\] .*begin add/update listener: name=`),
		))

		Expect(get(port, "/before", nil)).To(Equal(200))
		Eventually(func() string { return readFile(accessLog) }, 10*time.Second).Should(ContainSubstring("AL /before"))
		Eventually(func() string { return readFile(appLog) }, 10*time.Second).Should(ContainSubstring("URL '/before'"))

		// What logrotate does: move the files away, then ask for a reopen.
		Expect(os.Rename(appLog, appLog+".1")).To(Succeed())
		Expect(os.Rename(accessLog, accessLog+".1")).To(Succeed())
		r := s.Post("/reopen_logs")
		Expect(r.Status).To(Equal(200), r.Body)

		Expect(get(port, "/after", nil)).To(Equal(200))
		Eventually(func() string { return readFile(accessLog) }, 10*time.Second).Should(ContainSubstring("AL /after"))
		Eventually(func() string { return readFile(appLog) }, 10*time.Second).Should(And(
			ContainSubstring("request complete: path: /reopen_logs"),
			ContainSubstring("URL '/after'"),
		))
		Expect(readFile(accessLog)).NotTo(ContainSubstring("AL /before"), "a new file")
		Expect(readFile(accessLog + ".1")).NotTo(ContainSubstring("AL /after"))
		Expect(readFile(appLog + ".1")).NotTo(ContainSubstring("URL '/after'"))
	})

	It("lists the stat names looked up by string during traffic, least looked-up first", func() {
		up := lbUpstream("up")
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port: port,
			Filters: `[{name: envoy.filters.http.fault, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault,
				abort: {http_status: 503, percentage: {numerator: 100}}, headers: [{name: x-fault, present_match: true}]}}]`,
			Clusters: []proxyCluster{{Name: "up", Port: up}},
		}.YAML(), "--file-flush-interval-msec", "50")
		Expect(s.Post("/stats/recentlookups/enable").Status).To(Equal(200))

		// The fault filter names its per-downstream-cluster counters at run
		// time, as Envoy does: one lookup per faulted request.
		faulted := http.Header{"X-Fault": {"1"}, "X-Envoy-Downstream-Service-Cluster": {"edge"}}
		for range 3 {
			Expect(get(port, "/f", faulted)).To(Equal(503))
		}
		Expect(get(port, "/ok", nil)).To(Equal(200))
		// The response code's counter is looked up once the upstream's
		// answer is done, which may be after the client has it.
		Eventually(func() string { return s.Get("/stats/recentlookups").Body }).
			Should(MatchRegexp(`(?m)^       1 cluster\.up\.upstream_rq_200$`))
		table := s.Get("/stats/recentlookups").Body
		Expect(table).To(HavePrefix("   Count Lookup\n"))
		Expect(table).To(MatchRegexp(`(?m)^       3 http\.[^ ]*fault\.edge\.aborts_injected$`))
		Expect(table).To(MatchRegexp(`(?m)^       1 cluster\.up\.upstream_rq_200$`))
		// Count ascending, then name.
		var counts []int
		for _, m := range regexp.MustCompile(`(?m)^ *([0-9]+) \S+$`).FindAllStringSubmatch(table, -1) {
			n, err := strconv.Atoi(m[1])
			Expect(err).NotTo(HaveOccurred())
			counts = append(counts, n)
		}
		Expect(counts).NotTo(BeEmpty())
		Expect(sort.IntsAreSorted(counts)).To(BeTrue(), table)

		// disable forgets the names; the total keeps counting.
		Expect(s.Post("/stats/recentlookups/disable").Status).To(Equal(200))
		before := recentLookupsTotal(s)
		Expect(get(port, "/f", faulted)).To(Equal(503))
		Expect(recentLookupsTotal(s)).To(BeNumerically(">", before))
		Expect(s.Get("/stats/recentlookups").Body).To(HavePrefix("Lookup tracking is not enabled."))

		// clear zeroes the total.
		Expect(s.Post("/stats/recentlookups/clear").Status).To(Equal(200))
		Expect(recentLookupsTotal(s)).To(BeNumerically("<", before))
	})
})

// getOnNewConnection sends GET path on a connection of its own, closed
// after the answer, and returns the status.
func getOnNewConnection(port int, path string) int {
	GinkgoHelper()
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 5*time.Second)
	Expect(err).NotTo(HaveOccurred())
	defer c.Close()
	Expect(c.SetDeadline(time.Now().Add(10 * time.Second))).To(Succeed())
	_, err = fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path)
	Expect(err).NotTo(HaveOccurred())
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	Expect(err).NotTo(HaveOccurred())
	_, _ = io.Copy(io.Discard, resp.Body)
	Expect(resp.Body.Close()).To(Succeed())
	return resp.StatusCode
}

// recentLookupsTotal is the total that /stats/recentlookups ends with.
func recentLookupsTotal(s *Sidecar) int {
	GinkgoHelper()
	m := regexp.MustCompile(`\ntotal: ([0-9]+)\n$`).FindStringSubmatch(s.Get("/stats/recentlookups").Body)
	Expect(m).To(HaveLen(2))
	n, err := strconv.Atoi(m[1])
	Expect(err).NotTo(HaveOccurred())
	return n
}
