package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// failingUpstream answers 200 with its name, or, while failing is set, the
// status in fail (a hang when it is 0: the request waits until its client
// goes away). It counts the requests it got.
type failingUpstream struct {
	name     string
	fail     atomic.Int32
	requests atomic.Int64
}

func (u *failingUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.requests.Add(1)
	switch code := int(u.fail.Load()); code {
	case grpcUnavailable:
		// A gRPC trailers-only answer: HTTP 200, grpc-status 14.
		w.Header().Set("content-type", "application/grpc")
		w.Header().Set("grpc-status", "14")
	case 0:
		_, _ = io.WriteString(w, u.name)
	case -1:
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	default:
		w.WriteHeader(code)
		_, _ = io.WriteString(w, u.name)
	}
}

// hang makes the upstream hold every request; grpcUnavailable answer
// them with gRPC's UNAVAILABLE.
const (
	hang            = -1
	grpcUnavailable = -2
)

// outlierCluster is a cluster "od" over the given ports with the YAML flow
// fields of an outlier_detection.
func outlierCluster(od string, ports ...int) proxyCluster {
	eps := make([]string, len(ports))
	for i, p := range ports {
		eps[i] = fmt.Sprintf("{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}", p)
	}
	return proxyCluster{Name: "od", Port: ports[0],
		Extra: "{load_assignment: {cluster_name: od, endpoints: [{lb_endpoints: [" + strings.Join(eps, ", ") + "]}]}, outlier_detection: " + od + "}"}
}

// odGet sends a GET through the listener on a connection of its own and
// returns status and body; header are its extra fields.
func odGet(port int, header ...string) (int, string) {
	GinkgoHelper()
	c := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	req, err := http.NewRequest(http.MethodGet, listenerURL(port, "/"), nil)
	Expect(err).NotTo(HaveOccurred())
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, string(b)
}

// odStat is a cluster od outlier_detection stat.
func odStat(s *Sidecar, name string) string {
	GinkgoHelper()
	return statValue(s, "cluster.od.outlier_detection."+name)
}

// hostFlags is the health_flags line of a host in /clusters.
func hostFlags(s *Sidecar, port int) string {
	GinkgoHelper()
	prefix := fmt.Sprintf("od::127.0.0.1:%d::health_flags::", port)
	for _, l := range strings.Split(s.Get("/clusters").Body, "\n") {
		if strings.HasPrefix(l, prefix) {
			return strings.TrimPrefix(l, prefix)
		}
	}
	return "(no host)"
}

// outlierEvents reads the event log's JSON lines.
func outlierEvents(path string) []map[string]any {
	GinkgoHelper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	Expect(err).NotTo(HaveOccurred())
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l == "" {
			continue
		}
		var ev map[string]any
		Expect(json.Unmarshal([]byte(l), &ev)).To(Succeed(), "event line %q", l)
		out = append(out, ev)
	}
	return out
}

var _ = Describe("Outlier detection", func() {
	It("ejects a host after consecutive 5xx, keeps traffic off it, and returns it after base_ejection_time, with stats, /clusters and the event log", func() {
		good, bad := &failingUpstream{name: "good"}, &failingUpstream{name: "bad"}
		bad.fail.Store(503)
		goodPort, badPort := portNum(httpTestUpstream(good, false)), portNum(httpTestUpstream(bad, false))
		port, dir := freePort(), newDir()
		events := filepath.Join(dir, "outlier.log")
		s := Start(dir, proxySpec{
			Port:     port,
			Top:      `{cluster_manager: {outlier_detection: {event_log_path: ` + events + `}}}`,
			Clusters: []proxyCluster{outlierCluster("{consecutive_5xx: 3, interval: 0.2s, base_ejection_time: 1s, max_ejection_percent: 50}", goodPort, badPort)},
		}.YAML())
		s.WaitLive()
		Expect(odStat(s, "ejections_active")).To(Equal("0"))
		Expect(s.Get("/clusters").Body).To(ContainSubstring("od::outlier::success_rate_average::-1\n"))

		// Round robin: six requests give the failing host three.
		for range 6 {
			odGet(port)
		}
		Expect(bad.requests.Load()).To(BeEquivalentTo(3))
		Expect(odStat(s, "ejections_active")).To(Equal("1"))
		Expect(odStat(s, "ejections_enforced_total")).To(Equal("1"))
		Expect(odStat(s, "ejections_enforced_consecutive_5xx")).To(Equal("1"))
		Expect(odStat(s, "ejections_detected_consecutive_5xx")).To(Equal("1"))
		Expect(odStat(s, "ejections_total")).To(Equal("1"))
		Expect(statValue(s, "cluster.od.membership_healthy")).To(Equal("1"))
		Expect(hostFlags(s, badPort)).To(Equal("/failed_outlier_check"))
		Expect(hostFlags(s, goodPort)).To(Equal("healthy"))
		// The series the chart's alert and dashboard panel query.
		prom := s.Get("/stats/prometheus").Body
		Expect(prom).To(MatchRegexp(`(?m)^proxy_cluster_outlier_detection_ejections_active\{proxy_cluster_name="od"\} 1$`))
		Expect(prom).To(MatchRegexp(`(?m)^proxy_cluster_outlier_detection_ejections_enforced_total\{proxy_cluster_name="od"\} 1$`))

		// While it is out, every request goes to the other host.
		for range 6 {
			status, body := odGet(port)
			Expect(status).To(Equal(200))
			Expect(body).To(Equal("good"))
		}
		Expect(bad.requests.Load()).To(BeEquivalentTo(3))

		// Back after base_ejection_time (1s), at the next interval.
		bad.fail.Store(0)
		Eventually(func() string { return odStat(s, "ejections_active") }, 10*time.Second, 50*time.Millisecond).Should(Equal("0"))
		Expect(hostFlags(s, badPort)).To(Equal("healthy"))
		bodies := map[string]int{}
		for range 4 {
			_, body := odGet(port)
			bodies[body]++
		}
		Expect(bodies).To(Equal(map[string]int{"good": 2, "bad": 2}))

		evs := outlierEvents(events)
		Expect(evs).To(HaveLen(2))
		Expect(evs[0]).To(HaveKeyWithValue("action", "EJECT"))
		Expect(evs[0]).To(HaveKeyWithValue("type", "CONSECUTIVE_5XX"))
		Expect(evs[0]).To(HaveKeyWithValue("enforced", true))
		Expect(evs[0]).To(HaveKeyWithValue("cluster_name", "od"))
		Expect(evs[0]).To(HaveKeyWithValue("upstream_url", fmt.Sprintf("127.0.0.1:%d", badPort)))
		Expect(evs[0]).To(HaveKeyWithValue("num_ejections", BeEquivalentTo(1)))
		Expect(evs[0]).To(HaveKey("eject_consecutive_event"))
		Expect(evs[1]).To(HaveKeyWithValue("action", "UNEJECT"))
		// Whole seconds since the ejection: base_ejection_time (1s), a
		// little more on a busy machine.
		Expect(evs[1]).To(HaveKeyWithValue("secs_since_last_action", BeElementOf("1", "2", "3")))
	})

	It("ejects a host that refuses connections as a local-origin failure when origins are split", func() {
		good := &failingUpstream{name: "good"}
		goodPort, refused := portNum(httpTestUpstream(good, false)), freePort()
		port, dir := freePort(), newDir()
		s := Start(dir, proxySpec{
			Port: port,
			Clusters: []proxyCluster{outlierCluster("{split_external_local_origin_errors: true, consecutive_local_origin_failure: 2, max_ejection_percent: 50, base_ejection_time: 60s}",
				goodPort, refused)},
		}.YAML())
		s.WaitLive()
		failed := 0
		for range 4 {
			if status, _ := odGet(port); status == 503 {
				failed++
			}
		}
		Expect(failed).To(Equal(2))
		Expect(odStat(s, "ejections_enforced_consecutive_local_origin_failure")).To(Equal("1"))
		Expect(odStat(s, "ejections_detected_consecutive_local_origin_failure")).To(Equal("1"))
		Expect(odStat(s, "ejections_detected_consecutive_5xx")).To(Equal("0"))
		Expect(hostFlags(s, refused)).To(Equal("/failed_outlier_check"))
		for range 4 {
			status, body := odGet(port)
			Expect(status).To(Equal(200))
			Expect(body).To(Equal("good"))
		}
	})

	It("counts a route timeout as a gateway failure", func() {
		good, slow := &failingUpstream{name: "good"}, &failingUpstream{name: "slow"}
		slow.fail.Store(hang)
		goodPort, slowPort := portNum(httpTestUpstream(good, false)), portNum(httpTestUpstream(slow, false))
		port, dir := freePort(), newDir()
		s := Start(dir, proxySpec{
			Port:   port,
			Routes: `[{match: {prefix: /}, route: {cluster: od, timeout: 0.2s}}]`,
			Clusters: []proxyCluster{outlierCluster("{consecutive_gateway_failure: 2, enforcing_consecutive_gateway_failure: 100, consecutive_5xx: 100, max_ejection_percent: 50, base_ejection_time: 60s}",
				goodPort, slowPort)},
		}.YAML())
		s.WaitLive()
		timedOut := 0
		for range 4 {
			if status, _ := odGet(port); status == 504 {
				timedOut++
			}
		}
		Expect(timedOut).To(Equal(2))
		Expect(odStat(s, "ejections_enforced_consecutive_gateway_failure")).To(Equal("1"))
		Expect(odStat(s, "ejections_detected_consecutive_5xx")).To(Equal("0"))
		Expect(hostFlags(s, slowPort)).To(Equal("/failed_outlier_check"))
		status, body := odGet(port)
		Expect(status).To(Equal(200))
		Expect(body).To(Equal("good"))
	})

	// ejectAfter sends four requests (header are their extra fields) over
	// a good and a bad host with consecutive_5xx 2 and checks the bad one
	// is ejected after its second.
	ejectAfter := func(s *Sidecar, port, badPort int, header ...string) {
		GinkgoHelper()
		for range 4 {
			odGet(port, header...)
		}
		Expect(odStat(s, "ejections_enforced_consecutive_5xx")).To(Equal("1"))
		Expect(hostFlags(s, badPort)).To(Equal("/failed_outlier_check"))
	}

	It("follows the runtime's outlier_detection keys", func() {
		good, bad := &failingUpstream{name: "good"}, &failingUpstream{name: "bad"}
		bad.fail.Store(500)
		goodPort, badPort := portNum(httpTestUpstream(good, false)), portNum(httpTestUpstream(bad, false))
		port, dir := freePort(), newDir()
		s := Start(dir, proxySpec{
			Port:     port,
			Top:      `{layered_runtime: {layers: [{name: admin, admin_layer: {}}]}}`,
			Clusters: []proxyCluster{outlierCluster("{consecutive_5xx: 100, max_ejection_percent: 50}", goodPort, badPort)},
		}.YAML())
		s.WaitLive()
		Expect(s.Post("/runtime_modify?outlier_detection.consecutive_5xx=2").Status).To(Equal(200))
		ejectAfter(s, port, badPort)
	})

	It("counts a gRPC response's grpc-status, mapped to HTTP", func() {
		good, bad := &failingUpstream{name: "good"}, &failingUpstream{name: "bad"}
		bad.fail.Store(grpcUnavailable)
		goodPort, badPort := portNum(httpTestUpstream(good, false)), portNum(httpTestUpstream(bad, false))
		port, dir := freePort(), newDir()
		s := Start(dir, proxySpec{
			Port:     port,
			Clusters: []proxyCluster{outlierCluster("{consecutive_5xx: 2, max_ejection_percent: 50}", goodPort, badPort)},
		}.YAML())
		s.WaitLive()
		// A plain request's 200 is a success even with grpc-status.
		for range 4 {
			odGet(port)
		}
		Expect(odStat(s, "ejections_enforced_consecutive_5xx")).To(Equal("0"))
		ejectAfter(s, port, badPort, "content-type", "application/grpc")
	})

	It("counts an HTTP/2 upstream's answers", func() {
		good, bad := &failingUpstream{name: "good"}, &failingUpstream{name: "bad"}
		bad.fail.Store(503)
		goodPort, badPort := portNum(httpTestUpstream(good, true)), portNum(httpTestUpstream(bad, true))
		port, dir := freePort(), newDir()
		c := outlierCluster("{consecutive_5xx: 2, max_ejection_percent: 50}", goodPort, badPort)
		h2 := h2cOptions()
		c.Extra = strings.TrimSuffix(c.Extra, "}") + ", " + h2[1:len(h2)-1] + "}"
		s := Start(dir, proxySpec{Port: port, Clusters: []proxyCluster{c}}.YAML())
		s.WaitLive()
		ejectAfter(s, port, badPort)
		Expect(statValue(s, "cluster.od.upstream_cx_http2_total")).NotTo(Equal("0"))
	})

	// burst sends n requests; it reports whether the host on port was
	// ejected by then.
	burst := func(s *Sidecar, port, n, hostPort int) bool {
		for range n {
			odGet(port)
		}
		return hostFlags(s, hostPort) == "/failed_outlier_check"
	}

	It("ejects the host whose success rate falls below the cluster's threshold at an interval", func() {
		good, bad := &failingUpstream{name: "good"}, &failingUpstream{name: "bad"}
		bad.fail.Store(500)
		goodPort, badPort := portNum(httpTestUpstream(good, false)), portNum(httpTestUpstream(bad, false))
		port, dir := freePort(), newDir()
		events := filepath.Join(dir, "outlier.log")
		s := Start(dir, proxySpec{
			Port: port,
			Top:  `{cluster_manager: {outlier_detection: {event_log_path: ` + events + `}}}`,
			// Two hosts at 100% and 0%: mean 50, deviation 50; a factor
			// of 0.5 puts the threshold at 25.
			Clusters: []proxyCluster{outlierCluster("{consecutive_5xx: 1000, interval: 0.5s, base_ejection_time: 60s, max_ejection_percent: 50, success_rate_minimum_hosts: 2, success_rate_request_volume: 4, success_rate_stdev_factor: 500}",
				goodPort, badPort)},
		}.YAML())
		s.WaitLive()
		Eventually(func() bool { return burst(s, port, 10, badPort) }, 15*time.Second, 100*time.Millisecond).Should(BeTrue(), "never ejected by success rate")
		Expect(odStat(s, "ejections_enforced_success_rate")).To(Equal("1"))
		Expect(odStat(s, "ejections_detected_success_rate")).To(Equal("1"))
		Expect(odStat(s, "ejections_success_rate")).To(Equal("1"))
		evs := outlierEvents(events)
		Expect(evs).NotTo(BeEmpty())
		Expect(evs[0]).To(HaveKeyWithValue("type", "SUCCESS_RATE"))
		Expect(evs[0]).To(HaveKeyWithValue("eject_success_rate_event", map[string]any{
			"host_success_rate": 0.0, "cluster_average_success_rate": 50.0, "cluster_success_rate_ejection_threshold": 25.0,
		}))
	})

	It("detects without enforcing at enforcing_success_rate 0, and ejects by failure percentage", func() {
		good, bad := &failingUpstream{name: "good"}, &failingUpstream{name: "bad"}
		bad.fail.Store(500)
		goodPort, badPort := portNum(httpTestUpstream(good, false)), portNum(httpTestUpstream(bad, false))
		port, dir := freePort(), newDir()
		s := Start(dir, proxySpec{
			Port: port,
			Clusters: []proxyCluster{outlierCluster("{consecutive_5xx: 1000, interval: 0.5s, base_ejection_time: 60s, max_ejection_percent: 50, "+
				"success_rate_minimum_hosts: 2, success_rate_request_volume: 4, success_rate_stdev_factor: 500, enforcing_success_rate: 0, "+
				"enforcing_failure_percentage: 100, failure_percentage_minimum_hosts: 2, failure_percentage_request_volume: 4}",
				goodPort, badPort)},
		}.YAML())
		s.WaitLive()
		Eventually(func() bool { return burst(s, port, 10, badPort) }, 15*time.Second, 100*time.Millisecond).Should(BeTrue(), "never ejected by failure percentage")
		Expect(odStat(s, "ejections_enforced_failure_percentage")).To(Equal("1"))
		Expect(odStat(s, "ejections_enforced_success_rate")).To(Equal("0"))
		Expect(odStat(s, "ejections_detected_success_rate")).NotTo(Equal("0"))
	})

	It("shows each host's success rate in /clusters", func() {
		good, bad := &failingUpstream{name: "good"}, &failingUpstream{name: "bad"}
		bad.fail.Store(500)
		goodPort, badPort := portNum(httpTestUpstream(good, false)), portNum(httpTestUpstream(bad, false))
		port, dir := freePort(), newDir()
		// A long interval, so that the figures stay until the test reads
		// them.
		s := Start(dir, proxySpec{
			Port:     port,
			Clusters: []proxyCluster{outlierCluster("{consecutive_5xx: 1000, interval: 1s, success_rate_minimum_hosts: 2, success_rate_request_volume: 2, success_rate_stdev_factor: 5000}", goodPort, badPort)},
		}.YAML())
		s.WaitLive()
		want := fmt.Sprintf("od::127.0.0.1:%d::success_rate::100\n", goodPort)
		Eventually(func() string {
			for range 4 {
				odGet(port)
			}
			return s.Get("/clusters").Body
		}, 15*time.Second, 100*time.Millisecond).Should(And(
			ContainSubstring(want),
			ContainSubstring(fmt.Sprintf("od::127.0.0.1:%d::success_rate::0\n", badPort)),
			ContainSubstring("od::outlier::success_rate_average::50\n"),
			ContainSubstring("od::outlier::success_rate_ejection_threshold::-200\n"),
		))
	})
})

var _ = Describe("Outlier detection on a TCP proxy", func() {
	It("ejects a host whose connections fail and keeps new connections off it", func() {
		echoPort, refused := startTCPServer(echo), freePort()
		port := freePort()
		cluster := strings.TrimSuffix(tcpCluster("od", echoPort, refused), "}") +
			", outlier_detection: {consecutive_5xx: 2, max_ejection_percent: 50, base_ejection_time: 60s}}"
		s := Start(newDir(), tcpBootstrap(port, "cluster: od", cluster))
		s.WaitLive()
		// roundTrip reports whether a connection's bytes came back.
		roundTrip := func() bool {
			c := dialTCP(port)
			defer c.Close()
			if _, err := c.Write([]byte("ping")); err != nil {
				return false
			}
			_ = c.CloseWrite()
			b, _ := io.ReadAll(c)
			return string(b) == "ping"
		}
		ok := 0
		for range 4 {
			if roundTrip() {
				ok++
			}
		}
		Expect(ok).To(Equal(2))
		Expect(odStat(s, "ejections_enforced_consecutive_5xx")).To(Equal("1"))
		Expect(hostFlags(s, refused)).To(Equal("/failed_outlier_check"))
		for range 4 {
			Expect(roundTrip()).To(BeTrue())
		}
	})
})
