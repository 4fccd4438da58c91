package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"
)

// lbHost is an upstream of the locality and subset specs: an HTTP server
// on its own loopback address (127.0.0.2, 127.0.0.3...) answering its
// name, so that the spec counts which host served each request.
type lbHost struct {
	name, ip string
	port     int
}

// addr is the host's "ip:port", as /clusters names it.
func (h lbHost) addr() string { return fmt.Sprintf("%s:%d", h.ip, h.port) }

// endpoint is the host's lb_endpoints item (YAML flow), with extra fields
// (", metadata: {...}").
func (h lbHost) endpoint(extra string) string {
	return fmt.Sprintf("{endpoint: {address: {socket_address: {address: %s, port_value: %d}}}%s}", h.ip, h.port, extra)
}

// startLBHost serves name on ip until the spec ends.
func startLBHost(name, ip string) lbHost {
	GinkgoHelper()
	ln, err := net.Listen("tcp", ip+":0")
	Expect(err).NotTo(HaveOccurred())
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, name)
	})}
	go func() { _ = srv.Serve(ln) }()
	DeferCleanup(srv.Close)
	return lbHost{name: name, ip: ip, port: ln.Addr().(*net.TCPAddr).Port}
}

// startLBHosts starts one host per name, on 127.0.0.2 onwards.
func startLBHosts(names ...string) map[string]lbHost {
	GinkgoHelper()
	out := map[string]lbHost{}
	for i, name := range names {
		out[name] = startLBHost(name, fmt.Sprintf("127.0.0.%d", i+2))
	}
	return out
}

// locality is one locality_lb_endpoints entry (YAML flow) of a zone, with
// a load_balancing_weight (0: unset) and the hosts' lb_endpoints items.
func locality(zone string, weight int, endpoints ...string) string {
	w := ""
	if weight > 0 {
		w = fmt.Sprintf(", load_balancing_weight: %d", weight)
	}
	return fmt.Sprintf("{locality: {region: r1, zone: %s}%s, lb_endpoints: [%s]}", zone, w, strings.Join(endpoints, ", "))
}

// endpoints is a cluster's load_assignment (YAML flow fields) of
// localities.
func endpoints(localities ...string) string {
	return "load_assignment: {endpoints: [" + strings.Join(localities, ", ") + "]}"
}

// servedBy sends n GETs of path to the listener and counts the answers by
// body ("503" for a 503).
func servedBy(port, n int, path string) map[string]int {
	GinkgoHelper()
	return servedByWith(port, n, path, nil)
}

// servedByWith is servedBy for requests with headers.
func servedByWith(port, n int, path string, header http.Header) map[string]int {
	GinkgoHelper()
	client := &http.Client{Timeout: 5 * time.Second}
	counts := map[string]int{}
	for range n {
		req, err := http.NewRequest(http.MethodGet, listenerURL(port, path), nil)
		Expect(err).NotTo(HaveOccurred())
		req.Header = header.Clone()
		resp, err := client.Do(req)
		Expect(err).NotTo(HaveOccurred())
		b, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			counts[string(b)]++
		default:
			counts[fmt.Sprint(resp.StatusCode)]++
		}
	}
	return counts
}

// about matches a count within tolerance of want.
func about(want, tolerance int) OmegaMatcher {
	return BeNumerically("~", want, tolerance)
}

var _ = Describe("Locality-weighted load balancing", func() {
	DescribeTable("splits a priority's traffic by locality weight times availability",
		func(drainB2 bool, wantA, wantB1, wantB2 int) {
			h := startLBHosts("a1", "b1", "b2", "c1")
			drain := ""
			if drainB2 {
				drain = ", health_status: DRAINING"
			}
			port := freePort()
			s := Start(newDir(), proxySpec{
				Port: port,
				Clusters: []proxyCluster{{Name: "web", Extra: "{common_lb_config: {locality_weighted_lb_config: {}}, " + endpoints(
					locality("a", 1, h["a1"].endpoint("")),
					locality("b", 3, h["b1"].endpoint(""), h["b2"].endpoint(drain)),
					// No weight: no traffic while another locality has some.
					locality("c", 0, h["c1"].endpoint("")),
				) + "}"}},
			}.YAML())
			got := servedBy(port, 400, "/")
			Expect(got["a1"]).To(about(wantA, 8))
			Expect(got["b1"]).To(about(wantB1, 8))
			Expect(got["b2"]).To(about(wantB2, 8))
			Expect(got).NotTo(HaveKey("c1"))

			body := s.Get("/clusters").Body
			Expect(hostLine(body, "web", h["a1"].addr(), "rq_total")).To(Equal(fmt.Sprint(got["a1"])))
			Expect(hostLine(body, "web", h["c1"].addr(), "rq_total")).To(Equal("0"))
			Expect(hostLine(body, "web", h["b1"].addr(), "zone")).To(Equal("b"))
		},
		// Weights 1:3 and both localities whole: 100 and 300, b's hosts
		// sharing.
		Entry("every host available", false, 100, 150, 150),
		// b has half its hosts: 3 x min(1, 1.4 x 1/2) = 2.1 against a's
		// 1, so a gets 1/3.1 of the traffic and b1 the rest.
		Entry("half of b's hosts draining", true, 129, 271, 0),
	)

	DescribeTable("folds the locality weights into a ring hash or maglev policy's ring or table, as Envoy",
		func(lbFields string) {
			h := startLBHosts("a1", "b1", "b2", "b3")
			port := freePort()
			Start(newDir(), proxySpec{
				Port:   port,
				Routes: `[{match: {prefix: /}, route: {cluster: web, hash_policy: [{header: {header_name: x-user}}]}}]`,
				Clusters: []proxyCluster{{Name: "web", Extra: "{" + lbFields + ", " + endpoints(
					locality("a", 3, h["a1"].endpoint("")),
					locality("b", 1, h["b1"].endpoint(""), h["b2"].endpoint(""), h["b3"].endpoint("")),
				) + "}"}},
			}.YAML())
			// a's one host has 3/4 of the hashes (by host count it would
			// have 1/4); each user sticks to a host. 400 users: the
			// binomial spread of a's count is about 9, that of the ring's
			// arcs (random ports move the points) about 5; the tolerance
			// is over 4 of their combined spread.
			byZone := map[string]int{}
			for u := range 400 {
				got := servedByWith(port, 2, "/", http.Header{"X-User": {fmt.Sprint("user-", u)}})
				Expect(got).To(HaveLen(1), "user %d moved between hosts: %v", u, got)
				for name := range got {
					Expect(name).To(MatchRegexp(`^[ab][0-9]$`), "user %d: not an upstream's answer", u)
					byZone[name[:1]]++
				}
			}
			Expect(byZone["a"]).To(about(300, 45), "users by zone: %v", byZone)
		},
		Entry("ring hash, common_lb_config's", "lb_policy: RING_HASH, common_lb_config: {locality_weighted_lb_config: {}}"),
		Entry("maglev, the typed policy's", `load_balancing_policy: {policies: [{typed_extension_config: {name: envoy.load_balancing_policies.maglev, typed_config: {"@type": type.googleapis.com/envoy.extensions.load_balancing_policies.maglev.v3.Maglev, locality_weighted_lb_config: {}}}}]}`),
	)

	It("lists the locality weights in /config_dump and refuses a weight outside 1 to 100", func() {
		h := startLBHosts("a1")
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port: port,
			Clusters: []proxyCluster{{Name: "web", Extra: "{common_lb_config: {locality_weighted_lb_config: {}}, " +
				endpoints(locality("a", 7, h["a1"].endpoint(""))) + "}"}},
		}.YAML())
		Expect(s.Get("/config_dump?resource=static_clusters").Body).To(ContainSubstring(`"load_balancing_weight": 7`))

		res, _ := validate("bootstrap.yaml", proxySpec{
			Port: freePort(),
			Clusters: []proxyCluster{{Name: "web", Extra: "{common_lb_config: {locality_weighted_lb_config: {}}, " +
				endpoints(locality("a", 101, h["a1"].endpoint(""))) + "}"}},
		}.YAML())
		Expect(res.ExitCode).To(Equal(1))
		Expect(res.Stderr).To(ContainSubstring("static_resources.clusters[0].load_assignment.endpoints[0].load_balancing_weight: 101 is out of range: a weight is 1 to 100"))
	})
})

var _ = Describe("Zone-aware routing", func() {
	// zoneSpec is a proxy in zone a, whose local cluster "mesh" has the
	// given proxies per zone (their endpoints are never dialled), before
	// the upstream cluster "web" with three hosts in a and three in b.
	zoneSpec := func(port int, localA, localB int, webExtra string) (string, map[string]lbHost) {
		h := startLBHosts("a1", "a2", "a3", "b1", "b2", "b3")
		mesh := func(zone string, n int) string {
			// Proxies of zone a on 127.0.1.x, of zone b on 127.0.2.x.
			var eps []string
			for i := range n {
				eps = append(eps, fmt.Sprintf("{endpoint: {address: {socket_address: {address: 127.0.%d.%d, port_value: 9}}}}", zone[0]-'a'+1, i+1))
			}
			return locality(zone, 0, eps...)
		}
		web := locality("a", 0, h["a1"].endpoint(""), h["a2"].endpoint(""), h["a3"].endpoint("")) + ", " +
			locality("b", 0, h["b1"].endpoint(""), h["b2"].endpoint(""), h["b3"].endpoint(""))
		return proxySpec{
			Port: port,
			Top: `{node: {id: n1, locality: {region: r1, zone: a}}, cluster_manager: {local_cluster_name: mesh},
				layered_runtime: {layers: [{name: admin, admin_layer: {}}]}}`,
			Routes: `[{match: {prefix: /}, route: {cluster: web}}]`,
			Clusters: []proxyCluster{
				{Name: "web", Extra: "{" + webExtra + "load_assignment: {endpoints: [" + web + "]}}"},
				{Name: "mesh", Extra: "{" + endpoints(mesh("a", localA), mesh("b", localB)) + "}"},
			},
		}.YAML(), h
	}
	zoneOf := func(got map[string]int) map[string]int {
		out := map[string]int{}
		for name, n := range got {
			out[name[:1]] += n
		}
		return out
	}

	It("keeps every request in the proxy's zone while that zone has the capacity", func() {
		port := freePort()
		cfg, h := zoneSpec(port, 1, 1, "")
		s := Start(newDir(), cfg)
		// Half the proxies and half of web's hosts are in a.
		got := servedBy(port, 300, "/")
		Expect(zoneOf(got)).To(Equal(map[string]int{"a": 300}))
		Expect(got["a1"] + got["a2"] + got["a3"]).To(Equal(300))
		Expect(statValue(s, "cluster.web.lb_zone_routing_all_directly")).To(Equal("300"))
		Expect(statValue(s, "cluster.web.lb_zone_routing_cross_zone")).To(Equal("0"))
		Expect(statValue(s, "cluster.web.lb_recalculate_zone_structures")).NotTo(Equal("0"))
		body := s.Get("/clusters").Body
		Expect(hostLine(body, "web", h["b1"].addr(), "rq_total")).To(Equal("0"))
		Expect(hostLine(body, "web", h["a1"].addr(), "rq_total")).To(Equal(fmt.Sprint(got["a1"])))

		// The runtime turns zone routing off: the requests spread again.
		Expect(s.Post("/runtime_modify?upstream.zone_routing.enabled=0").Status).To(Equal(http.StatusOK))
		got = zoneOf(servedBy(port, 300, "/"))
		Expect(got["a"]).To(about(150, 3))
		Expect(got["b"]).To(about(150, 3))
		Expect(statValue(s, "cluster.web.lb_zone_routing_all_directly")).To(Equal("300"))
	})

	It("spills to other zones by their spare capacity when the local zone has too many proxies", func() {
		port := freePort()
		cfg, _ := zoneSpec(port, 2, 1, "")
		s := Start(newDir(), cfg)
		// 2/3 of the proxies are in a, with half of web's hosts: a
		// keeps 50/66.67 = 75% of this proxy's requests, b gets the rest.
		got := zoneOf(servedBy(port, 800, "/"))
		Expect(got["a"]).To(about(600, 60))
		Expect(got["b"]).To(about(200, 60))
		sampled := statValue(s, "cluster.web.lb_zone_routing_sampled")
		cross := statValue(s, "cluster.web.lb_zone_routing_cross_zone")
		Expect(sampled).To(Equal(fmt.Sprint(got["a"])))
		Expect(cross).To(Equal(fmt.Sprint(got["b"])))
		Expect(statValue(s, "cluster.web.lb_zone_routing_all_directly")).To(Equal("0"))
	})

	DescribeTable("force_local_zone keeps every request in the proxy's zone while it has min_size healthy hosts, where the shares would spill a quarter to other zones",
		func(minSize int, allLocal bool) {
			port := freePort()
			cfg, _ := zoneSpec(port, 2, 1, fmt.Sprintf(`load_balancing_policy: {policies: [{typed_extension_config: {name: envoy.load_balancing_policies.round_robin, typed_config: {
			"@type": type.googleapis.com/envoy.extensions.load_balancing_policies.round_robin.v3.RoundRobin,
			locality_lb_config: {zone_aware_lb_config: {force_local_zone: {min_size: %d}}}}}}]}, `, minSize))
			s := Start(newDir(), cfg)
			got := zoneOf(servedBy(port, 800, "/"))
			if allLocal {
				Expect(got).To(Equal(map[string]int{"a": 800}))
				Expect(statValue(s, "cluster.web.lb_zone_routing_all_directly")).To(Equal("800"))
				return
			}
			Expect(got["a"]).To(about(600, 60))
			Expect(got["b"]).To(about(200, 60))
			Expect(statValue(s, "cluster.web.lb_zone_routing_all_directly")).To(Equal("0"))
		},
		// Zone a has three healthy hosts.
		Entry("min_size 3", 3, true),
		Entry("min_size 4: the shares again", 4, false),
	)

	It("does not route by zone when the upstream cluster is smaller than min_cluster_size", func() {
		port := freePort()
		cfg, _ := zoneSpec(port, 1, 1, "common_lb_config: {zone_aware_lb_config: {min_cluster_size: 7}}, ")
		s := Start(newDir(), cfg)
		got := zoneOf(servedBy(port, 200, "/"))
		Expect(got["a"]).To(about(100, 2))
		Expect(statValue(s, "cluster.web.lb_zone_cluster_too_small")).NotTo(Equal("0"))
		Expect(statValue(s, "cluster.web.lb_zone_routing_all_directly")).To(Equal("0"))
	})

	It("fails requests with fail_traffic_on_panic when the local cluster is in panic", func() {
		port := freePort()
		h := startLBHosts("a1", "a2", "a3", "b1", "b2", "b3")
		var web []string
		for _, zone := range []string{"a", "b"} {
			web = append(web, locality(zone, 0, h[zone+"1"].endpoint(""), h[zone+"2"].endpoint(""), h[zone+"3"].endpoint("")))
		}
		s := Start(newDir(), proxySpec{
			Port:   port,
			Top:    `{node: {locality: {region: r1, zone: a}}, cluster_manager: {local_cluster_name: mesh}}`,
			Routes: `[{match: {prefix: /}, route: {cluster: web}}]`,
			Clusters: []proxyCluster{
				{Name: "web", Extra: "{common_lb_config: {zone_aware_lb_config: {fail_traffic_on_panic: true}}, " + endpoints(web...) + "}"},
				// One proxy of three is healthy: the local cluster is in panic.
				{Name: "mesh", Extra: "{" + endpoints(
					locality("a", 0, "{endpoint: {address: {socket_address: {address: 127.0.1.1, port_value: 9}}}}"),
					locality("b", 0, "{endpoint: {address: {socket_address: {address: 127.0.2.1, port_value: 9}}}, health_status: UNHEALTHY}",
						"{endpoint: {address: {socket_address: {address: 127.0.2.2, port_value: 9}}}, health_status: UNHEALTHY}"),
				) + "}"},
			},
		}.YAML())
		Expect(servedBy(port, 5, "/")).To(Equal(map[string]int{"503": 5}))
		Expect(statValue(s, "cluster.web.lb_local_cluster_not_ok")).To(Equal("5"))
		Expect(statValue(s, "cluster.web.upstream_cx_none_healthy")).To(Equal("5"))
	})

	It("refuses a local cluster that is not defined, and unsupported cluster_manager fields, with their paths", func() {
		res, _ := validate("bootstrap.yaml", proxySpec{
			Port:     freePort(),
			Top:      `{cluster_manager: {local_cluster_name: mesh, enable_deferred_cluster_creation: true, outlier_detection: {event_service: {grpc_service: {envoy_grpc: {cluster_name: web}}}}}}`,
			Clusters: []proxyCluster{{Name: "web", Port: 9, Extra: "{common_lb_config: {zone_aware_lb_config: {routing_enabled: {value: 101}}}}"}},
		}.YAML())
		Expect(res.ExitCode).To(Equal(1))
		Expect(res.Stderr).To(ContainSubstring(`cluster_manager.local_cluster_name: local cluster "mesh" must be defined in static_resources.clusters`))
		Expect(res.Stderr).To(ContainSubstring("cluster_manager.outlier_detection.event_service: "))
		Expect(res.Stderr).NotTo(ContainSubstring("enable_deferred_cluster_creation"), "accepted: there is nothing to defer")
		Expect(res.Stderr).To(ContainSubstring("static_resources.clusters[0].common_lb_config.zone_aware_lb_config.routing_enabled.value: "))
	})
})

var _ = Describe("Load-balancer subsets", func() {
	// The hosts and selectors of Envoy's subset documentation; the
	// [stage] selector comes first, so that its own fallback policy
	// applies (the first selector to reach a set of keys sets it).
	subsetHosts := func() map[string]lbHost { return startLBHosts("host1", "host2", "host3", "host4") }
	subsetEndpoints := func(h map[string]lbHost) string {
		md := func(v, stage string) string {
			return fmt.Sprintf(", metadata: {filter_metadata: {envoy.lb: {v: %q, stage: %s}}}", v, stage)
		}
		return "load_assignment: {endpoints: [{lb_endpoints: [" + strings.Join([]string{
			h["host1"].endpoint(md("1.0", "prod")), h["host2"].endpoint(md("1.0", "prod")),
			h["host3"].endpoint(md("1.1", "canary")), h["host4"].endpoint(md("1.2-pre", "dev")),
		}, ", ") + "]}]}"
	}
	route := func(prefix, cluster, criteria string) string {
		r := fmt.Sprintf("{match: {prefix: %s}, route: {cluster: %s", prefix, cluster)
		if criteria != "" {
			r += ", metadata_match: {filter_metadata: {envoy.lb: " + criteria + "}}"
		}
		return r + "}}"
	}

	It("routes by metadata_match to the subset, or by each fallback policy", func() {
		h := subsetHosts()
		port := freePort()
		routes := []string{
			route("/canary", "default", "{stage: canary}"),
			route("/dev", "default", `{v: "1.2-pre", stage: dev}`),
			route("/v10", "default", `{v: "1.0"}`),
			route("/other", "default", "{other: x}"),
			route("/test", "default", "{stage: test}"),
			route("/any", "any", "{stage: test}"),
			route("/none", "none", "{stage: test}"),
			route("/selector-any", "selector-any", "{stage: test}"),
			// A weighted cluster's criteria merge over the route's.
			`{match: {prefix: /weighted}, route: {metadata_match: {filter_metadata: {envoy.lb: {stage: canary, v: "1.1"}}},
				weighted_clusters: {clusters: [{name: default, weight: 1, metadata_match: {filter_metadata: {envoy.lb: {stage: dev, v: "1.2-pre"}}}}]}}}`,
			route("/", "default", ""),
		}
		eps := subsetEndpoints(h)
		s := Start(newDir(), proxySpec{
			Port:   port,
			Routes: "[" + strings.Join(routes, ", ") + "]",
			Clusters: []proxyCluster{
				{Name: "default", Extra: `{lb_subset_config: {fallback_policy: DEFAULT_SUBSET, default_subset: {stage: prod},
					subset_selectors: [{keys: [stage], fallback_policy: NO_FALLBACK}, {keys: [v, stage]}]}, ` + eps + "}"},
				{Name: "any", Extra: "{lb_subset_config: {fallback_policy: ANY_ENDPOINT, subset_selectors: [{keys: [stage]}]}, " + eps + "}"},
				{Name: "none", Extra: "{lb_subset_config: {subset_selectors: [{keys: [stage]}]}, " + eps + "}"},
				{Name: "selector-any", Extra: "{lb_subset_config: {subset_selectors: [{keys: [stage], fallback_policy: ANY_ENDPOINT}]}, " + eps + "}"},
			},
		}.YAML())

		Expect(servedBy(port, 4, "/canary")).To(Equal(map[string]int{"host3": 4}))
		Expect(servedBy(port, 4, "/dev")).To(Equal(map[string]int{"host4": 4}))
		Expect(servedBy(port, 4, "/v10")).To(Equal(map[string]int{"host1": 2, "host2": 2}))
		Expect(servedBy(port, 4, "/other")).To(Equal(map[string]int{"host1": 2, "host2": 2}))
		Expect(servedBy(port, 4, "/")).To(Equal(map[string]int{"host1": 2, "host2": 2}))
		Expect(servedBy(port, 4, "/test")).To(Equal(map[string]int{"503": 4}))
		Expect(servedBy(port, 8, "/any")).To(Equal(map[string]int{"host1": 2, "host2": 2, "host3": 2, "host4": 2}))
		Expect(servedBy(port, 4, "/none")).To(Equal(map[string]int{"503": 4}))
		Expect(servedBy(port, 8, "/selector-any")).To(Equal(map[string]int{"host1": 2, "host2": 2, "host3": 2, "host4": 2}))
		Expect(servedBy(port, 4, "/weighted")).To(Equal(map[string]int{"host4": 4}))

		stats := func(cluster string, names ...string) []string {
			var out []string
			for _, n := range names {
				out = append(out, n+"="+statValue(s, "cluster."+cluster+"."+n))
			}
			return out
		}
		// default: 3 stage subsets and 3 v+stage ones; /canary, /dev and
		// /weighted selected one (12), /v10, /other and / fell back (12).
		Expect(stats("default", "lb_subsets_active", "lb_subsets_created", "lb_subsets_removed", "lb_subsets_selected", "lb_subsets_fallback", "upstream_cx_none_healthy")).To(Equal([]string{
			"lb_subsets_active=6", "lb_subsets_created=6", "lb_subsets_removed=0", "lb_subsets_selected=12", "lb_subsets_fallback=12", "upstream_cx_none_healthy=4",
		}))
		Expect(stats("any", "lb_subsets_active", "lb_subsets_fallback")).To(Equal([]string{"lb_subsets_active=3", "lb_subsets_fallback=8"}))
		// A selector's own fallback is not the cluster's.
		Expect(stats("selector-any", "lb_subsets_fallback")).To(Equal([]string{"lb_subsets_fallback=0"}))
		Expect(hostLine(s.Get("/clusters").Body, "default", h["host3"].addr(), "rq_total")).To(Equal("4"))
	})

	It("falls back to any host with panic_mode_any, and through a metadata fallback_list", func() {
		h := subsetHosts()
		port := freePort()
		eps := subsetEndpoints(h)
		s := Start(newDir(), proxySpec{
			Port: port,
			Routes: "[" + strings.Join([]string{
				route("/panic", "panic", "{stage: test}"),
				route("/list", "list", `{stage: prod, fallback_list: [{v: "9"}, {stage: canary, v: "1.1"}]}`),
			}, ", ") + "]",
			Clusters: []proxyCluster{
				{Name: "panic", Extra: `{lb_subset_config: {fallback_policy: DEFAULT_SUBSET, default_subset: {stage: gone}, panic_mode_any: true,
					subset_selectors: [{keys: [stage]}]}, ` + eps + "}"},
				{Name: "list", Extra: "{lb_subset_config: {metadata_fallback_policy: FALLBACK_LIST, subset_selectors: [{keys: [v, stage]}]}, " + eps + "}"},
			},
		}.YAML())
		Expect(servedBy(port, 8, "/panic")).To(Equal(map[string]int{"host1": 2, "host2": 2, "host3": 2, "host4": 2}))
		Expect(statValue(s, "cluster.panic.lb_subsets_fallback_panic")).To(Equal("8"))
		Expect(servedBy(port, 4, "/list")).To(Equal(map[string]int{"host3": 4}))
	})

	It("merges the stream's envoy.lb dynamic metadata over the route's metadata_match", func() {
		h := subsetHosts()
		port := freePort()
		eps := subsetEndpoints(h)
		s := Start(newDir(), proxySpec{
			Port: port,
			// x-stage becomes the stream's envoy.lb stage, which the
			// router merges over the route's criteria.
			Filters: "[" + httpFilter("envoy.filters.http.header_to_metadata", headerToMetadataType,
				`{request_rules: [{header: x-stage, on_header_present: {metadata_namespace: envoy.lb, key: stage}}]}`) + "]",
			Routes: "[" + strings.Join([]string{
				route("/merge", "default", `{v: "1.1", stage: prod}`),
				route("/", "default", ""),
			}, ", ") + "]",
			Clusters: []proxyCluster{
				{Name: "default", Extra: `{lb_subset_config: {fallback_policy: DEFAULT_SUBSET, default_subset: {stage: prod},
					subset_selectors: [{keys: [stage]}, {keys: [v, stage]}]}, ` + eps + "}"},
			},
		}.YAML())
		canary := http.Header{"X-Stage": {"canary"}}
		// {v: 1.1, stage: prod} has no subset: the default one.
		Expect(servedBy(port, 4, "/merge")).To(Equal(map[string]int{"host1": 2, "host2": 2}))
		// The metadata's stage replaces the route's: {v: 1.1, stage: canary}.
		Expect(servedByWith(port, 4, "/merge", canary)).To(Equal(map[string]int{"host3": 4}))
		// Without route criteria, the metadata's alone: {stage: dev}.
		Expect(servedByWith(port, 4, "/", http.Header{"X-Stage": {"dev"}})).To(Equal(map[string]int{"host4": 4}))
		Expect(servedBy(port, 4, "/")).To(Equal(map[string]int{"host1": 2, "host2": 2}))
		Expect(statValue(s, "cluster.default.lb_subsets_selected")).To(Equal("8"))
	})

	It("chooses a tcp_proxy's subset by its metadata_match, a weighted cluster's merged over it", func() {
		h := subsetHosts()
		direct, weighted := freePort(), freePort()
		tcpProxy := func(fields string) string {
			return `{name: envoy.filters.network.tcp_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy,
				stat_prefix: front, ` + fields + `}}`
		}
		listener := func(name string, port int, filter string) string {
			return fmt.Sprintf("{name: %s, address: {socket_address: {address: 127.0.0.1, port_value: %d}}, filter_chains: [{filters: [%s]}]}", name, port, filter)
		}
		Start(newDir(), fmt.Sprintf(`
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
static_resources:
  clusters:
  - {name: web, type: STATIC, connect_timeout: 1s, %s,
     lb_subset_config: {fallback_policy: ANY_ENDPOINT, subset_selectors: [{keys: [stage]}, {keys: [v, stage]}]}}
  listeners: [%s, %s]
`, strings.Replace(subsetEndpoints(h), "load_assignment: {", "load_assignment: {cluster_name: web, ", 1),
			listener("direct", direct, tcpProxy(`cluster: web, metadata_match: {filter_metadata: {envoy.lb: {stage: canary}}}`)),
			listener("weighted", weighted, tcpProxy(`metadata_match: {filter_metadata: {envoy.lb: {stage: canary, v: "1.0"}}},
				weighted_clusters: {clusters: [{name: web, weight: 1, metadata_match: {filter_metadata: {envoy.lb: {stage: prod}}}}]}`))))
		// Each GET on a connection of its own: a pick per connection.
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		served := func(port, n int) map[string]int {
			counts := map[string]int{}
			for range n {
				resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
				Expect(err).NotTo(HaveOccurred())
				b, err := io.ReadAll(resp.Body)
				Expect(err).NotTo(HaveOccurred())
				resp.Body.Close()
				counts[string(b)]++
			}
			return counts
		}
		Expect(served(direct, 4)).To(Equal(map[string]int{"host3": 4}))
		// {v: "1.0", stage: prod}: host1 and host2, in turn.
		Expect(served(weighted, 4)).To(Equal(map[string]int{"host1": 2, "host2": 2}))
	})

	It("refuses subset configurations Envoy refuses, with their paths", func() {
		res, _ := validate("bootstrap.yaml", proxySpec{
			Port: freePort(),
			Clusters: []proxyCluster{{Name: "web", Port: 9, Extra: `{lb_subset_config: {locality_weight_aware: true,
				subset_selectors: [{keys: [a, b], fallback_policy: KEYS_SUBSET, fallback_keys_subset: [c]}, {keys: [a], fallback_keys_subset: [a]}]}}`}},
		}.YAML())
		Expect(res.ExitCode).To(Equal(1))
		for _, line := range []string{
			"static_resources.clusters[0].lb_subset_config.locality_weight_aware: requires common_lb_config.locality_weighted_lb_config",
			"static_resources.clusters[0].lb_subset_config.subset_selectors[0].fallback_keys_subset: fallback_keys_subset must be a subset of selector keys",
			"static_resources.clusters[0].lb_subset_config.subset_selectors[1].fallback_keys_subset: fallback_keys_subset can be set only for KEYS_SUBSET fallback_policy",
		} {
			Expect(res.Stderr).To(ContainSubstring(line))
		}
	})

	It("updates the subsets when discovery changes the hosts: a subset left alone keeps its round robin's place; subsets created and removed are counted", func() {
		h := subsetHosts()
		stages := map[string]string{"host1": "prod", "host2": "prod", "host3": "canary", "host4": "dev"}
		assignment := func(hosts ...string) *endpointv3.ClusterLoadAssignment {
			var items []string
			for _, name := range hosts {
				items = append(items, h[name].endpoint(fmt.Sprintf(", metadata: {filter_metadata: {envoy.lb: {stage: %s}}}", stages[name])))
			}
			js, err := yaml.YAMLToJSON([]byte("{cluster_name: web, endpoints: [{lb_endpoints: [" + strings.Join(items, ", ") + "]}]}"))
			Expect(err).NotTo(HaveOccurred())
			cla := &endpointv3.ClusterLoadAssignment{}
			Expect(protojson.Unmarshal(js, cla)).To(Succeed())
			return cla
		}
		m := startManagementServer()
		m.set(adsSnapshot("v1", nil, assignment("host1", "host2", "host3")))
		port := freePort()
		// Endpoints over ADS, a static listener.
		var boot map[string]any
		Expect(json.Unmarshal([]byte(adsBootstrap(m.port, "", merge(edsCluster("web", "web", ""),
			"{lb_subset_config: {subset_selectors: [{keys: [stage]}]}}"))), &boot)).To(Succeed())
		delete(boot["dynamic_resources"].(map[string]any), "lds_config")
		boot["static_resources"].(map[string]any)["listeners"] = []any{proxySpec{
			Port: port, Routes: "[" + route("/canary", "web", "{stage: canary}") + ", " + route("/dev", "web", "{stage: dev}") + ", " + route("/prod", "web", "{stage: prod}") + "]",
		}.listener()}
		cfg, err := json.Marshal(boot)
		Expect(err).NotTo(HaveOccurred())
		s := Start(newDir(), string(cfg))
		Expect(servedBy(port, 2, "/canary")).To(Equal(map[string]int{"host3": 2}))
		Expect(servedBy(port, 2, "/dev")).To(Equal(map[string]int{"503": 2}))
		Expect(statValue(s, "cluster.web.lb_subsets_active")).To(Equal("2"))
		Expect(statValue(s, "cluster.web.lb_subsets_created")).To(Equal("2"))
		// One request to the prod subset: the next goes to the other host.
		first := servedBy(port, 1, "/prod")
		Expect(first).To(HaveLen(1))
		next := "host1"
		if first["host1"] == 1 {
			next = "host2"
		}

		// The canary leaves, a dev host comes; prod is left alone, and its
		// round robin goes on where it was (a subset built again would
		// start at a random host).
		m.set(adsSnapshot("v2", nil, assignment("host1", "host2", "host4")))
		waitStat(s, "cluster.web.lb_subsets_removed", "1")
		Expect(servedBy(port, 1, "/prod")).To(Equal(map[string]int{next: 1}))
		Expect(statValue(s, "cluster.web.lb_subsets_created")).To(Equal("3"))
		Expect(statValue(s, "cluster.web.lb_subsets_active")).To(Equal("2"))
		Expect(servedBy(port, 2, "/dev")).To(Equal(map[string]int{"host4": 2}))
		Expect(servedBy(port, 2, "/canary")).To(Equal(map[string]int{"503": 2}))
	})
})
