package e2e

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/types/known/durationpb"
)

var _ = Describe("xDS updates under load", func() {
	It("fails no request while clusters, endpoints and routes change, some re-pointing the loaded route to an equivalent cluster", func() {
		a, b := startNamed("A"), startNamed("B")
		m := startManagementServer()
		// Failed requests are logged with their flags and details, so
		// that a failure says which path refused the request.
		chain := strings.Replace(rdsChain("churn", "routes"), "http_filters:", `access_log: [{name: failed, `+
			`filter: {status_code_filter: {comparison: {op: GE, value: {default_value: 500, runtime_key: churn.min_status}}}}, `+
			`typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StderrAccessLog, `+
			`log_format: {text_format_source: {inline_string: "FAILED %RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS% %UPSTREAM_CLUSTER% %UPSTREAM_HOST% %UPSTREAM_TRANSPORT_FAILURE_REASON%\n"}}}}], http_filters:`, 1)
		ls := []*listenerv3.Listener{listenerProto(listenerDef{Name: "ingress", Chains: []string{chain}})}

		// The route sends every request to loaded; spare is an equivalent
		// cluster. Updates change spare's endpoints (between A and B),
		// the idle cluster (never routed to: its host is idle.test) and
		// the idle virtual host, and swap loaded and spare.
		loaded, spare := "svc", "alt"
		at := map[string]int{"svc": a, "alt": b}
		idleTimeout := 1
		idleTarget := "idle"
		snapshot := func(version string) {
			idle := discoveredEDSCluster("idle", "idle")
			idle.ConnectTimeout = durationpb.New(time.Duration(idleTimeout) * time.Second)
			cs := []*clusterv3.Cluster{discoveredEDSCluster("svc", "svc"), discoveredEDSCluster("alt", "alt"), idle}
			clas := []*endpointv3.ClusterLoadAssignment{
				loadAssignment("svc", edsEndpoint{port: at["svc"]}),
				loadAssignment("alt", edsEndpoint{port: at["alt"]}),
				loadAssignment("idle", edsEndpoint{port: a}),
			}
			rc := routeConfigProto("routes", `[{name: idle, domains: ["idle.test"], routes: [{match: {prefix: "/"}, route: {cluster: `+idleTarget+`}}]}, `+
				`{name: all, domains: ["*"], routes: [{match: {prefix: "/"}, route: {cluster: `+loaded+`}}]}]`)
			m.set(routesSnapshot(version, ls, cs, []*routev3.RouteConfiguration{rc}, clas...))
		}
		snapshot("v0")
		s := Start(newDir(), cdsBootstrap(m.port))
		waitLive(s)
		addr := listenerAddr(s, "ingress")

		// A bounded load: at most 4000 requests or 60 s, on keep-alive
		// connections; every answer must be 200 "A" or "B".
		finish := steadyLoad(addr)
		for i := 1; i <= 20; i++ {
			switch i % 4 {
			case 0:
				idleTimeout = 1 + i%3
			case 1:
				if at[spare] == a {
					at[spare] = b
				} else {
					at[spare] = a
				}
			case 2:
				if idleTarget == "idle" {
					idleTarget = spare
				} else {
					idleTarget = "idle"
				}
			case 3:
				loaded, spare = spare, loaded
			}
			v := "u" + strconv.Itoa(i)
			snapshot(v)
			waitStat(s, "cluster_manager.cds.version_text", `"`+v+`"`)
			waitStat(s, "http.churn.rds.routes.version_text", `"`+v+`"`)
			waitStat(s, "cluster."+spare+".version_text", `"`+v+`"`)
			time.Sleep(50 * time.Millisecond)
		}
		total, failures := finish()
		Expect(failures).To(BeEmpty(), func() string { return failedLines(s.Stderr()) })
		Expect(total).To(BeNumerically(">", 20))

		// The updates took effect: the route goes to the cluster last made
		// the loaded one, at its endpoint.
		want := map[int]string{a: "A", b: "B"}[at[loaded]]
		client := &http.Client{Timeout: 10 * time.Second}
		Eventually(func() string { return httpDo(client, http.MethodGet, "http://"+addr+"/", nil, nil).Body }).Should(Equal(want))
		Expect(statValue(s, "cluster_manager.cds.update_rejected")).To(Equal("0"))
		Expect(statValue(s, "http.churn.rds.routes.update_rejected")).To(Equal("0"))
		Expect(statValue(s, "cluster_manager.cluster_modified")).To(Equal("5"), "the idle cluster changed 5 times")
	})
})

// failedLines picks the access log's FAILED lines out of a sidecar's
// stderr.
func failedLines(stderr string) string {
	var out []string
	for _, line := range strings.Split(stderr, "\n") {
		if strings.Contains(line, "FAILED ") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
