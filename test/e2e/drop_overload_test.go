package e2e

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Load assignment drop_overloads", func() {
	It("answers every request to a cluster dropping 100% with 503 DO before any host, and drops none at 0%", func() {
		var arrived atomic.Int64
		addr := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			arrived.Add(1)
			_, _ = io.WriteString(w, "ok")
		}), false)
		dropAll := `{load_assignment: {policy: {drop_overloads: [{category: drop_overload, drop_percentage: {numerator: 100}}]}}}`
		dropNone := `{load_assignment: {policy: {drop_overloads: [{category: drop_overload, drop_percentage: {numerator: 0, denominator: MILLION}}]}}}`
		port, dir := freePort(), newDir()
		logPath := filepath.Join(dir, "access.log")
		s := Start(dir, proxySpec{
			Port:   port,
			HCM:    `{access_log: [` + fileLog(logPath, "%REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS%\n") + `]}`,
			Routes: `[{match: {prefix: /drop}, route: {cluster: dropped}}, {match: {prefix: /}, route: {cluster: kept}}]`,
			Clusters: []proxyCluster{
				{Name: "dropped", Port: portNum(addr), Extra: dropAll},
				{Name: "kept", Port: portNum(addr), Extra: dropNone},
			},
		}.YAML(), "--file-flush-interval-msec", "20")
		s.WaitLive()

		c := &http.Client{Timeout: 15 * time.Second}
		get := func(path string) (int, string, string) {
			GinkgoHelper()
			resp, err := c.Get(listenerURL(port, path))
			Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			Expect(err).NotTo(HaveOccurred())
			return resp.StatusCode, resp.Header.Get("x-envoy-drop-overload"), string(b)
		}
		const n = 20
		for i := range n {
			status, header, body := get(fmt.Sprintf("/drop/%d", i))
			Expect(status).To(Equal(http.StatusServiceUnavailable))
			Expect(header).To(Equal("true"))
			Expect(body).To(Equal("drop overload"))
		}
		Expect(arrived.Load()).To(BeZero(), "a dropped request reached the upstream")
		Expect(statValue(s, "cluster.dropped.upstream_rq_503")).To(Equal(fmt.Sprint(n)))
		Expect(statValue(s, "cluster.dropped.upstream_rq_total")).To(Equal("0"), "a dropped request counted as sent upstream")

		for i := range n {
			status, header, body := get(fmt.Sprintf("/keep/%d", i))
			Expect(status).To(Equal(http.StatusOK))
			Expect(header).To(BeEmpty())
			Expect(body).To(Equal("ok"))
		}
		Expect(arrived.Load()).To(Equal(int64(n)))
		Expect(statValue(s, "cluster.kept.upstream_rq_200")).To(Equal(fmt.Sprint(n)))

		Eventually(func() int { return strings.Count(readFile(logPath), "\n") }, 10*time.Second).Should(Equal(2 * n))
		log := readFile(logPath)
		Expect(log).To(ContainSubstring("/drop/0 503 DO drop_overload\n"))
		Expect(log).To(ContainSubstring(fmt.Sprintf("/drop/%d 503 DO drop_overload\n", n-1)))
		Expect(log).To(ContainSubstring("/keep/0 200 - via_upstream\n"))
		Expect(log).NotTo(ContainSubstring("/keep/0 503"))
	})

	It("refuses more than one drop_overloads category with Envoy's message and the field's path", func() {
		spec := proxySpec{Port: freePort(), Clusters: []proxyCluster{{Name: "two", Port: freePort(),
			Extra: `{load_assignment: {policy: {drop_overloads: [{category: a, drop_percentage: {numerator: 1}}, {category: b, drop_percentage: {numerator: 2}}]}}}`}}}
		r, _ := validate("drop.yaml", spec.YAML())
		Expect(r.ExitCode).To(Equal(1), "stderr: %s", r.Stderr)
		Expect(r.Stderr).To(ContainSubstring("static_resources.clusters[0].load_assignment.policy.drop_overloads: Cluster drop_overloads config has 2 categories. Envoy only support one."))
	})
})
