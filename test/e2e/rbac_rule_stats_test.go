package e2e

import (
	"fmt"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("The RBAC HTTP filter's track_per_rule_stats", func() {
	It("counts each deciding policy at /stats, as Envoy names the counters", func() {
		up := portNum(httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, "upstream")
		}), false))
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port: port,
			HCM:  `{stat_prefix: edge}`,
			Filters: `[` + httpFilter("envoy.filters.http.rbac", httpRBACType, `{track_per_rule_stats: true, rules_stat_prefix: live,
				rules: {action: ALLOW, policies: {reads: {permissions: [{header: {name: ":method", string_match: {exact: GET}}}], principals: [{any: true}]}}},
				shadow_rules_stat_prefix: dry_,
				shadow_rules: {action: DENY, policies: {no-delete: {permissions: [{header: {name: ":method", string_match: {exact: DELETE}}}], principals: [{any: true}]}}}}`) + `]`,
			Clusters: []proxyCluster{{Name: "up", Port: up}},
		}.YAML())
		client := &http.Client{Timeout: 5 * time.Second}
		for _, m := range []string{"GET", "GET", "DELETE"} {
			r := httpDo(client, m, listenerURL(port, "/x"), nil, nil)
			if m == "GET" {
				Expect(r.Status).To(Equal(200))
			} else {
				Expect(r.Status).To(Equal(403))
			}
		}
		Expect(statValue(s, "http.edge.rbac.live.policy.reads.allowed")).To(Equal("2"))
		Expect(statValue(s, "http.edge.rbac.live.allowed")).To(Equal("2"))
		Expect(statValue(s, "http.edge.rbac.live.denied")).To(Equal("1"), "the DELETE matched no policy: no per-policy counter")
		Expect(statValue(s, "http.edge.rbac.dry_.policy.no-delete.shadow_denied")).To(Equal("1"))
		Expect(statValue(s, "http.edge.rbac.dry_.shadow_allowed")).To(Equal("2"))
	})
})
