package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// subClustersListener is an HTTP listener whose dynamic_forward_proxy
// filter has sub_cluster_config (filterFields, YAML flow without braces),
// routing everything to cluster; it logs to logPath.
func subClustersListener(name string, port int, filterFields, cluster, logPath string) string {
	return fmt.Sprintf(`{name: %s, address: {socket_address: {address: 127.0.0.1, port_value: %d}}, filter_chains: [{filters: [{name: envoy.filters.network.http_connection_manager, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager,
		stat_prefix: %s,
		access_log: [{name: envoy.access_loggers.file, typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog, path: %q, log_format: {text_format_source: {inline_string: "%%REQ(:AUTHORITY)%% %%RESPONSE_CODE%% %%RESPONSE_FLAGS%% %%RESPONSE_CODE_DETAILS%%\n"}}}}],
		http_filters: [{name: envoy.filters.http.dynamic_forward_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.dynamic_forward_proxy.v3.FilterConfig, %s}},
			{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}],
		route_config: {virtual_hosts: [{name: all, domains: ["*"], routes: [{match: {prefix: /}, route: {cluster: %s}}]}]}}}]}]}`,
		name, port, name, logPath, filterFields, cluster)
}

// subClustersCluster is a dynamic_forward_proxy cluster with
// sub_clusters_config (subFields), whose sub-clusters resolve through the
// DNS server on dnsPort (the cluster's typed_dns_resolver_config, which
// they inherit).
func subClustersCluster(name string, dnsPort int, subFields string) string {
	return fmt.Sprintf(`{name: %s, connect_timeout: 2s, lb_policy: CLUSTER_PROVIDED, dns_lookup_family: V4_ONLY, typed_dns_resolver_config: %s,
		cluster_type: {name: envoy.clusters.dynamic_forward_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.clusters.dynamic_forward_proxy.v3.ClusterConfig, sub_clusters_config: {%s}}}}`,
		name, caresResolver(dnsPort, ""), subFields)
}

var _ = Describe("Dynamic forward proxy sub-clusters", func() {
	It("makes a cluster per host:port on demand, bounded by max_sub_clusters, removed once unused for sub_cluster_ttl", func() {
		dns := startDNSServer()
		lns, up := listenSamePort("127.0.0.1", "127.0.0.2")
		serveHost(lns[0], "A", nil)
		serveHost(lns[1], "B", nil)
		dns.set("alpha.test", "127.0.0.1")
		dns.set("beta.test", "127.0.0.2")
		alpha, beta := fmt.Sprintf("alpha.test:%d", up), fmt.Sprintf("beta.test:%d", up)
		subAlpha, subBeta := "DFPCluster:"+alpha, "DFPCluster:"+beta

		dir := newDir()
		logPath := filepath.Join(dir, "access.log")
		port := freePort()
		s := Start(dir, bootstrapOf(
			[]string{subClustersListener("front", port, "sub_cluster_config: {cluster_init_timeout: 5s}", "dfp", logPath)},
			[]string{subClustersCluster("dfp", dns.port, "lb_policy: ROUND_ROBIN, max_sub_clusters: 3, sub_cluster_ttl: 2s")}),
			"--file-flush-interval-msec", "50")

		By("each host gets its sub-cluster, which carries its requests")
		code, body := dfpRequest(port, alpha, "/")
		Expect(code).To(Equal(200), body)
		Expect(body).To(Equal("A host=" + alpha + " sni=-"))
		code, body = dfpRequest(port, alpha, "/")
		Expect(code).To(Equal(200), body)
		code, body = dfpRequest(port, beta, "/")
		Expect(code).To(Equal(200), body)
		Expect(body).To(Equal("B host=" + beta + " sni=-"))

		clusters := s.Get("/clusters").Body
		Expect(hostLine(clusters, subAlpha, fmt.Sprintf("127.0.0.1:%d", up), "hostname")).To(Equal("alpha.test"), clusters)
		Expect(hostLine(clusters, subAlpha, fmt.Sprintf("127.0.0.1:%d", up), "rq_total")).To(Equal("2"))
		Expect(hostLine(clusters, subBeta, fmt.Sprintf("127.0.0.2:%d", up), "hostname")).To(Equal("beta.test"))
		Expect(clusters).To(ContainSubstring(subAlpha + "::added_via_api::true"))
		Expect(statValue(s, "cluster."+subAlpha+".upstream_cx_total")).To(Equal("1"))
		Expect(statValue(s, "cluster."+subAlpha+".upstream_rq_total")).To(Equal("2"))
		Expect(statValue(s, "cluster.dfp.upstream_rq_200")).To(Equal("3"))
		Expect(statValue(s, "cluster_manager.cluster_added")).To(Equal("3"))

		By("the configuration dump shows them as the parent's STRICT_DNS copies")
		dump := s.Get("/config_dump?resource=dynamic_active_clusters").Body
		Expect(dump).To(ContainSubstring(`"name": "` + subAlpha + `"`))
		Expect(dump).To(ContainSubstring(`"type": "STRICT_DNS"`))

		By("a name that does not resolve gets a sub-cluster without hosts")
		nowhere := fmt.Sprintf("nowhere.test:%d", up)
		code, _ = dfpRequest(port, nowhere, "/")
		Expect(code).To(Equal(503))
		Eventually(func() string { return readFile(logPath) }).Should(MatchRegexp(`(?m)^` + nowhere + ` 503 UH no_healthy_upstream$`))

		By("past max_sub_clusters a new host is refused")
		gamma := fmt.Sprintf("gamma.test:%d", up)
		code, body = dfpRequest(port, gamma, "/")
		Expect(code).To(Equal(503))
		Expect(body).To(Equal("Sub cluster overflow"))
		Eventually(func() string { return readFile(logPath) }).Should(MatchRegexp(`(?m)^` + gamma + ` 503 - sub_cluster_overflow$`))
		code, _ = dfpRequest(port, alpha, "/")
		Expect(code).To(Equal(200), "a known host still goes through")

		By("unused for sub_cluster_ttl, the sub-clusters go")
		Eventually(func() string { return statValue(s, "cluster_manager.cluster_removed") }, 15*time.Second).Should(Equal("3"))
		Expect(s.Get("/clusters").Body).NotTo(ContainSubstring("DFPCluster:"))
		code, body = dfpRequest(port, gamma, "/")
		Expect(code).To(Equal(503), "gamma.test does not resolve")
		Expect(body).NotTo(Equal("Sub cluster overflow"), "room again")
		code, body = dfpRequest(port, beta, "/")
		Expect(code).To(Equal(200), body)
		Expect(statValue(s, "cluster_manager.cluster_added")).To(Equal("6"))
	})

	It("answers 503 sub_cluster_warming_timeout when a sub-cluster does not warm within cluster_init_timeout", func() {
		silent := startDNSServer()
		silent.silent.Store(true)
		dir := newDir()
		logPath := filepath.Join(dir, "access.log")
		port := freePort()
		s := Start(dir, bootstrapOf(
			[]string{subClustersListener("front", port, "sub_cluster_config: {cluster_init_timeout: 0.3s}", "dfp", logPath)},
			[]string{subClustersCluster("dfp", silent.port, "")}),
			"--file-flush-interval-msec", "50")

		code, body := dfpRequest(port, "slow.test", "/")
		Expect(code).To(Equal(503))
		Expect(body).To(Equal("Sub cluster warming timeout"))
		Eventually(func() string { return readFile(logPath) }).Should(MatchRegexp(`(?m)^slow.test 503 - sub_cluster_warming_timeout$`))
		Expect(statValue(s, "cluster_manager.warming_clusters")).To(Equal("1"), "DFPCluster:slow.test:80 still warms")
	})

	It("refuses sub-clusters it cannot build, naming the field", func() {
		r, _ := validate("b.yaml", bootstrapOf(nil, []string{subClustersCluster("dfp", 53, "lb_policy: CLUSTER_PROVIDED")}))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("static_resources.clusters[0].cluster_type.typed_config.sub_clusters_config.lb_policy: unsupported lb_policy 'CLUSTER_PROVIDED' in sub_cluster_config"))
		r, _ = validate("b.yaml", bootstrapOf(nil, []string{subClustersCluster("dfp", 53, "preresolve_clusters: [{address: a.test}]")}))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("static_resources.clusters[0].cluster_type.typed_config.sub_clusters_config.preresolve_clusters[0].port_value: must be a port (1 to 65535)"))
		r, _ = validate("b.yaml", bootstrapOf(nil, []string{subClustersCluster("dfp", 53, "max_sub_clusters: 4")}))
		Expect(r.ExitCode).To(Equal(0), r.Stderr)
	})
})

var _ = Describe("Dynamic forward proxy DNS cache key_value_config", func() {
	It("writes its resolutions to the file store, and a restarted sidecar answers from them with the DNS server down", func() {
		dns := startDNSServer()
		lns, up := listenSamePort("127.0.0.1")
		serveHost(lns[0], "A", nil)
		dns.set("alpha.test", "127.0.0.1")
		alpha := fmt.Sprintf("alpha.test:%d", up)

		dir := newDir()
		store := filepath.Join(dir, "dns.kv")
		kv := fmt.Sprintf(`, key_value_config: {config: {name: envoy.key_value.file_based, typed_config: {"@type": type.googleapis.com/envoy.extensions.key_value.file_based.v3.FileBasedKeyValueStoreConfig, filename: %q, flush_interval: 0.1s}}}`, store)
		cache := dfpCache("kv_cache", dns.port, kv)
		port := freePort()
		logPath := filepath.Join(dir, "access.log")
		cfg := bootstrapOf([]string{dfpListener("front", port, cache, "dfp", "x", logPath)}, []string{dfpCluster("dfp", cache, "")})
		s := Start(dir, cfg)
		code, body := dfpRequest(port, alpha, "/")
		Expect(code).To(Equal(200), body)
		Expect(statValue(s, "dns_cache.kv_cache.cache_load")).To(Equal("0"))

		By("the store's file holds the resolution in Envoy's format")
		key := alpha
		Eventually(func() string { return readFile(store) }, 5*time.Second).Should(MatchRegexp(
			fmt.Sprintf(`^%d\n%s\d+\n127\.0\.0\.1:%d\|1\|\d+$`, len(key), regexp.QuoteMeta(key), up)))

		By("restarted with the DNS server gone, the stored address answers")
		s.Signal(os.Interrupt)
		Expect(s.Wait(10 * time.Second)).To(Equal(0))
		dns.Stop()
		s = Start(newDir(), cfg) // a fresh directory: the first one holds the old admin address
		Expect(statValue(s, "dns_cache.kv_cache.cache_load")).To(Equal("1"))
		code, body = dfpRequest(port, alpha, "/")
		Expect(code).To(Equal(200), body)
		Expect(body).To(Equal("A host=" + alpha + " sni=-"))
		Expect(statValue(s, "dns_cache.kv_cache.dns_query_attempt")).To(Equal("0"), "no query before the stored TTL")
		code, _ = dfpRequest(port, fmt.Sprintf("beta.test:%d", up), "/")
		Expect(code).To(Equal(503), "a name not stored needs the DNS")
	})
})
