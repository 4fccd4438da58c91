package e2e

import (
	"net/http"
	"strconv"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// answersByBody sends n GETs to addr on new connections and counts the
// answers by body.
func answersByBody(addr string, n int) map[string]int {
	GinkgoHelper()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	out := map[string]int{}
	for range n {
		out[httpDo(client, http.MethodGet, "http://"+addr+"/", nil, nil).Body]++
	}
	return out
}

var _ = Describe("Load balancing: excluded hosts", func() {
	It("keeps a host EDS adds out of the balancer's counts until its first health check (ignore_new_hosts_until_first_hc)", func() {
		a, c := newHCUpstream("A"), newHCUpstream("C")
		// A port that never accepts: the host's check waits for its timeout.
		silent := holdPort()
		m := startManagementServer()
		ingress := []*listenerv3.Listener{listenerProto(listenerDef{Name: "ingress", Chains: []string{routeToCluster("eds_ingress", "backend")}})}
		cl := edsCluster("backend", "backend-svc", "")
		cl["common_lb_config"] = map[string]any{"ignore_new_hosts_until_first_hc": true}
		// The silent host's first check waits 60 s for its timeout: the
		// host stays pending through the spec.
		cl["health_checks"] = flowYAML(`[{timeout: 60s, interval: 1s, no_traffic_interval: 1s, unhealthy_threshold: 1, healthy_threshold: 1, http_health_check: {path: /healthz}}]`)
		s := Launch(newDir(), "bootstrap.yaml", adsBootstrap(m.port, "", cl))
		s.WaitForAdmin()

		m.set(adsSnapshot("v1", ingress, loadAssignment("backend-svc", edsEndpoint{port: portNum(a.addr)}, edsEndpoint{port: portNum(c.addr), priority: 1})))
		waitLive(s)
		addr := listenerAddr(s, "ingress")
		Expect(answersByBody(addr, 4)).To(Equal(map[string]int{"A": 4}))

		m.set(adsSnapshot("v2", ingress, loadAssignment("backend-svc",
			edsEndpoint{port: portNum(a.addr)}, edsEndpoint{port: silent}, edsEndpoint{port: portNum(c.addr), priority: 1})))
		waitStat(s, "cluster.backend.version_text", `"v2"`)
		Expect(clusterHostFlags(s, "backend", "127.0.0.1:"+strconv.Itoa(silent))).To(Equal("/failed_active_hc/pending_active_hc"))
		Expect(statValue(s, "cluster.backend.membership_excluded")).To(Equal("1"))
		Expect(statValue(s, "cluster.backend.membership_total")).To(Equal("3"))
		// Priority 0 is one healthy host of one counted: it keeps all
		// the load. Counted as a failed host, the pending one would make
		// it 50% healthy and send 30% of the requests to priority 1.
		Expect(answersByBody(addr, 40)).To(Equal(map[string]int{"A": 40}))
	})
})
