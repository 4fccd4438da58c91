package e2e

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

// listenSamePort listens on one port of each of the loopback addresses.
func listenSamePort(ips ...string) ([]net.Listener, int) {
	GinkgoHelper()
	for range 20 {
		first, err := net.Listen("tcp", ips[0]+":0")
		Expect(err).NotTo(HaveOccurred())
		port := first.Addr().(*net.TCPAddr).Port
		lns := []net.Listener{first}
		for _, ip := range ips[1:] {
			ln, err := net.Listen("tcp", fmt.Sprintf("%s:%d", ip, port))
			if err != nil {
				break
			}
			lns = append(lns, ln)
		}
		if len(lns) == len(ips) {
			DeferCleanup(func() {
				for _, ln := range lns {
					_ = ln.Close() // the servers may have closed it
				}
			})
			return lns, port
		}
		for _, ln := range lns {
			_ = ln.Close()
		}
	}
	Fail("no port free on every address")
	return nil, 0
}

// serveHost answers each HTTP request with name and the Host it got.
func serveHost(ln net.Listener, name string, cfg *tls.Config) {
	srv := &http.Server{
		ReadHeaderTimeout: 5 * time.Second,
		TLSConfig:         cfg,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sni := "-"
			if r.TLS != nil {
				sni = r.TLS.ServerName
			}
			fmt.Fprintf(w, "%s host=%s sni=%s", name, r.Host, sni)
		}),
	}
	go func() {
		if cfg != nil {
			_ = srv.ServeTLS(ln, "", "")
			return
		}
		_ = srv.Serve(ln)
	}()
	DeferCleanup(srv.Close)
}

// serveTLSName completes a TLS handshake with each client and writes
// name and the server name the client sent, then closes.
func serveTLSName(ln net.Listener, name string, cert tls.Certificate) {
	tl := tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}})
	go func() {
		for {
			c, err := tl.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				tc := c.(*tls.Conn)
				if tc.Handshake() != nil {
					return
				}
				fmt.Fprintf(tc, "%s sni=%s", name, tc.ConnectionState().ServerName)
			}()
		}
	}()
}

// tlsThrough opens a TLS connection through the sidecar's port with the
// given server name ("" sends none) and returns what the upstream wrote,
// or the error.
func tlsThrough(port int, serverName string) (string, error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{ServerName: serverName, InsecureSkipVerify: true}) //nolint:gosec // the upstreams' certificates are the test's own
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(c)
	return string(b), err
}

// dfpRequest sends GET path through the listener with the given Host and
// extra headers (name, value pairs).
func dfpRequest(port int, host, path string, headers ...string) (int, string) {
	GinkgoHelper()
	req, err := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d%s", port, path), nil)
	Expect(err).NotTo(HaveOccurred())
	req.Host = host
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, string(b)
}

// dfpCache is a DnsCacheConfig (YAML flow) resolving through the test's
// DNS server, with extra fields.
func dfpCache(name string, dnsPort int, extra string) string {
	return fmt.Sprintf(`{name: %s, dns_lookup_family: V4_ONLY, typed_dns_resolver_config: %s%s}`, name, caresResolver(dnsPort, ""), extra)
}

// dfpCluster is a dynamic_forward_proxy cluster (YAML flow) of the cache,
// with extra cluster fields.
func dfpCluster(name, cache, extra string) string {
	return fmt.Sprintf(`{name: %s, connect_timeout: 2s, lb_policy: CLUSTER_PROVIDED, cluster_type: {name: envoy.clusters.dynamic_forward_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.clusters.dynamic_forward_proxy.v3.ClusterConfig, dns_cache_config: %s}}%s}`, name, cache, extra)
}

// dfpListener is an HTTP listener whose dynamic_forward_proxy filter uses
// the cache, routing to cluster: /literal rewrites the Host to literal,
// /header to the x-target header's value, the rest as sent. It logs to
// logPath.
func dfpListener(name string, port int, cache, cluster, literal, logPath string) string {
	perRoute := func(fields string) string {
		return `typed_per_filter_config: {envoy.filters.http.dynamic_forward_proxy: {"@type": type.googleapis.com/envoy.extensions.filters.http.dynamic_forward_proxy.v3.PerRouteConfig, ` + fields + `}}`
	}
	return fmt.Sprintf(`{name: %s, address: {socket_address: {address: 127.0.0.1, port_value: %d}}, filter_chains: [{filters: [{name: envoy.filters.network.http_connection_manager, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager,
		stat_prefix: %s,
		access_log: [{name: envoy.access_loggers.file, typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog, path: %q, log_format: {text_format_source: {inline_string: "%%REQ(:AUTHORITY)%% %%RESPONSE_CODE%% %%RESPONSE_FLAGS%% %%RESPONSE_CODE_DETAILS%%\n"}}}}],
		http_filters: [{name: envoy.filters.http.dynamic_forward_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.dynamic_forward_proxy.v3.FilterConfig, dns_cache_config: %s}},
			{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}],
		route_config: {virtual_hosts: [{name: all, domains: ["*"], routes: [
			{match: {prefix: /literal}, route: {cluster: %s}, %s},
			{match: {prefix: /header}, route: {cluster: %s}, %s},
			{match: {prefix: /}, route: {cluster: %s}}]}]}}}]}]}`,
		name, port, name, logPath, cache, cluster, perRoute(fmt.Sprintf("host_rewrite_literal: %q", literal)), cluster, perRoute("host_rewrite_header: x-target"), cluster)
}

// tcpListener is a listener with tls_inspector whose chain runs filters
// (YAML flow list items) before tcp_proxy to cluster.
func tcpListener(name string, port int, filters, cluster string) string {
	return fmt.Sprintf(`{name: %s, address: {socket_address: {address: 127.0.0.1, port_value: %d}},
		listener_filters: [{name: envoy.filters.listener.tls_inspector, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector}}],
		filter_chains: [{filters: [%s, {name: envoy.filters.network.tcp_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: %s, cluster: %s}}]}]}`,
		name, port, filters, name, cluster)
}

// staticCluster is a STATIC cluster (YAML flow) of one host.
func staticCluster(name, ip string, port int) string {
	return fmt.Sprintf(`{name: %s, connect_timeout: 2s, load_assignment: {cluster_name: %s, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: %s, port_value: %d}}}}]}]}}`, name, name, ip, port)
}

// bootstrapOf is a bootstrap (YAML flow) of listeners and clusters.
func bootstrapOf(listeners, clusters []string) string {
	return fmt.Sprintf(`{admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}, static_resources: {listeners: [%s], clusters: [%s]}}`,
		strings.Join(listeners, ", "), strings.Join(clusters, ", "))
}

var _ = Describe("Dynamic forward proxy", func() {
	It("resolves each request's Host through the DNS cache, rewrites hosts per route, and answers 503 for unknown names and a full cache", func() {
		dns := startDNSServer()
		lns, up := listenSamePort("127.0.0.1", "127.0.0.2")
		serveHost(lns[0], "A", nil)
		serveHost(lns[1], "B", nil)
		dns.set("alpha.test", "127.0.0.1")
		dns.set("beta.test", "127.0.0.2")
		alpha, beta := fmt.Sprintf("alpha.test:%d", up), fmt.Sprintf("beta.test:%d", up)

		dir := newDir()
		logPath := filepath.Join(dir, "access.log")
		port, small := freePort(), freePort()
		cache := dfpCache("dfp_cache", dns.port, "")
		smallCache := dfpCache("small", dns.port, ", max_hosts: 1")
		s := Start(dir, bootstrapOf(
			[]string{dfpListener("front", port, cache, "dfp", beta, logPath), dfpListener("small", small, smallCache, "dfp_small", beta, logPath)},
			[]string{dfpCluster("dfp", cache, ""), dfpCluster("dfp_small", smallCache, "")}), "--file-flush-interval-msec", "50")

		By("two names reach two upstreams, which see the Host sent")
		code, body := dfpRequest(port, alpha, "/")
		Expect(code).To(Equal(200), body)
		code, body = dfpRequest(port, alpha, "/")
		Expect(code).To(Equal(200))
		Expect(body).To(Equal("A host=" + alpha + " sni=-"))
		code, body = dfpRequest(port, beta, "/")
		Expect(code).To(Equal(200))
		Expect(body).To(Equal("B host=" + beta + " sni=-"))

		By("the hosts are the cluster's, keyed by host:port")
		clusters := s.Get("/clusters").Body
		Expect(hostLine(clusters, "dfp", fmt.Sprintf("127.0.0.1:%d", up), "hostname")).To(Equal(alpha))
		Expect(hostLine(clusters, "dfp", fmt.Sprintf("127.0.0.2:%d", up), "hostname")).To(Equal(beta))
		Expect(hostLine(clusters, "dfp", fmt.Sprintf("127.0.0.1:%d", up), "rq_total")).To(Equal("2"))

		By("per-route host rewrites, literal and from a header, choose the upstream and its Host")
		code, body = dfpRequest(port, alpha, "/literal")
		Expect(code).To(Equal(200))
		Expect(body).To(Equal("B host=" + beta + " sni=-"))
		code, body = dfpRequest(port, beta, "/header", "x-target", alpha)
		Expect(code).To(Equal(200))
		Expect(body).To(Equal("A host=" + alpha + " sni=-"))
		code, body = dfpRequest(port, beta, "/header")
		Expect(code).To(Equal(200), "without the header the Host stays")
		Expect(body).To(HavePrefix("B "))

		By("a name that does not resolve is a 503 with the DF flag")
		nowhere := fmt.Sprintf("nowhere.test:%d", up)
		code, body = dfpRequest(port, nowhere, "/")
		Expect(code).To(Equal(503))
		Expect(body).To(Equal("DNS resolution failure"))
		Eventually(func() string { return readFile(logPath) }).Should(MatchRegexp(`(?m)^` + nowhere + ` 503 DF dns_resolution_failure\{.*\}$`))

		By("a full cache refuses a new name")
		code, body = dfpRequest(small, alpha, "/")
		Expect(code).To(Equal(200), body)
		code, body = dfpRequest(small, beta, "/")
		Expect(code).To(Equal(503))
		Expect(body).To(Equal("DNS cache overflow"))
		Eventually(func() string { return readFile(logPath) }).Should(MatchRegexp(`(?m)^` + beta + ` 503 - dns_cache_overflow$`))

		By("the dns_cache stats count it all")
		st := statValues(s, `^dns_cache\.`)
		Expect(st).To(HaveKeyWithValue("dns_cache.dfp_cache.host_added", "3"))
		Expect(st).To(HaveKeyWithValue("dns_cache.dfp_cache.num_hosts", "3"))
		Expect(st).To(HaveKeyWithValue("dns_cache.dfp_cache.host_address_changed", "2"))
		Expect(st).To(HaveKeyWithValue("dns_cache.dfp_cache.host_overflow", "0"))
		Expect(st).To(HaveKeyWithValue("dns_cache.dfp_cache.dns_rq_pending_overflow", "0"))
		Expect(st).To(HaveKeyWithValue("dns_cache.dfp_cache.cache_load", "0"))
		Expect(st).To(HaveKey("dns_cache.dfp_cache.dns_query_attempt"))
		Expect(st["dns_cache.dfp_cache.dns_query_success"]).To(Equal(st["dns_cache.dfp_cache.dns_query_attempt"]), "NXDOMAIN is an answer")
		Expect(st).To(HaveKeyWithValue("dns_cache.dfp_cache.dns_query_failure", "0"))
		Expect(st).To(HaveKeyWithValue("dns_cache.small.host_added", "1"))
		Expect(st).To(HaveKeyWithValue("dns_cache.small.host_overflow", "1"))
		Expect(st).To(HaveKeyWithValue("dns_cache.small.num_hosts", "1"))
		Expect(st).To(HaveKeyWithValue("dns_cache.small.circuit_breakers.rq_pending_remaining", "1024"))
	})

	It("sends each host's name as SNI to a TLS upstream and checks its certificate against it", func() {
		dns := startDNSServer()
		dir := newDir()
		ca, err := tlstest.NewCA("dfp test CA")
		Expect(err).NotTo(HaveOccurred())
		caPath := filepath.Join(dir, "ca.pem")
		Expect(os.WriteFile(caPath, ca.PEM, 0o600)).To(Succeed())
		certFor := func(names ...string) tls.Certificate {
			leaf, err := ca.Issue(tlstest.Options{CommonName: names[0], DNS: names})
			Expect(err).NotTo(HaveOccurred())
			c, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
			Expect(err).NotTo(HaveOccurred())
			return c
		}
		lns, up := listenSamePort("127.0.0.1", "127.0.0.2")
		serveHost(lns[0], "A", &tls.Config{Certificates: []tls.Certificate{certFor("alpha.test")}})
		// 127.0.0.2's certificate is for another name: beta.test fails.
		serveHost(lns[1], "B", &tls.Config{Certificates: []tls.Certificate{certFor("other.test")}})
		dns.set("alpha.test", "127.0.0.1")
		dns.set("beta.test", "127.0.0.2")

		port := freePort()
		logPath := filepath.Join(dir, "access.log")
		cache := dfpCache("tls_cache", dns.port, "")
		ts := fmt.Sprintf(`, transport_socket: {name: envoy.transport_sockets.tls, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext, common_tls_context: {validation_context: {trusted_ca: {filename: %q}}}}}`, caPath)
		s := Start(dir, bootstrapOf(
			[]string{dfpListener("front", port, cache, "dfp_tls", "alpha.test", logPath)},
			[]string{dfpCluster("dfp_tls", cache, ts)}))

		alpha := fmt.Sprintf("alpha.test:%d", up)
		code, body := dfpRequest(port, alpha, "/")
		Expect(code).To(Equal(200), body)
		Expect(body).To(Equal("A host=" + alpha + " sni=alpha.test"))

		code, _ = dfpRequest(port, fmt.Sprintf("beta.test:%d", up), "/")
		Expect(code).To(Equal(503), "the certificate is not for beta.test")
		Expect(statValue(s, "cluster.dfp_tls.ssl.fail_verify_san")).To(Equal("1"))
	})

	It("routes TLS connections by their server name: sni_dynamic_forward_proxy through the DNS cache, sni_cluster to the cluster of that name", func() {
		dns := startDNSServer()
		ca, err := tlstest.NewCA("sni test CA")
		Expect(err).NotTo(HaveOccurred())
		leaf, err := ca.Issue(tlstest.Options{CommonName: "upstream", DNS: []string{"alpha.test", "beta.test"}})
		Expect(err).NotTo(HaveOccurred())
		cert, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
		Expect(err).NotTo(HaveOccurred())
		lns, up := listenSamePort("127.0.0.1", "127.0.0.2", "127.0.0.3")
		for i, name := range []string{"A", "B", "C"} {
			serveTLSName(lns[i], name, cert)
		}
		dns.set("alpha.test", "127.0.0.1")
		dns.set("beta.test", "127.0.0.2")

		dfpPort, sniPort := freePort(), freePort()
		cache := dfpCache("sni_cache", dns.port, "")
		sniDFP := fmt.Sprintf(`{name: envoy.filters.network.sni_dynamic_forward_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.sni_dynamic_forward_proxy.v3.FilterConfig, port_value: %d, dns_cache_config: %s}}`, up, cache)
		sniCluster := `{name: envoy.filters.network.sni_cluster, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.sni_cluster.v3.SniCluster}}`
		s := Start(newDir(), bootstrapOf(
			[]string{tcpListener("sni_dfp", dfpPort, sniDFP, "dfp_tcp"), tcpListener("sni_cluster", sniPort, sniCluster, "fallback")},
			[]string{
				dfpCluster("dfp_tcp", cache, ""),
				staticCluster("alpha.test", "127.0.0.1", up),
				staticCluster("beta.test", "127.0.0.2", up),
				staticCluster("fallback", "127.0.0.3", up),
			}))

		By("sni_dynamic_forward_proxy resolves the server name and connects to name:port_value")
		Expect(tlsThrough(dfpPort, "alpha.test")).To(Equal("A sni=alpha.test"))
		Expect(tlsThrough(dfpPort, "beta.test")).To(Equal("B sni=beta.test"))
		Expect(tlsThrough(dfpPort, "alpha.test")).To(Equal("A sni=alpha.test"))
		clusters := s.Get("/clusters").Body
		Expect(hostLine(clusters, "dfp_tcp", fmt.Sprintf("127.0.0.1:%d", up), "hostname")).To(Equal(fmt.Sprintf("alpha.test:%d", up)))
		Expect(hostLine(clusters, "dfp_tcp", fmt.Sprintf("127.0.0.1:%d", up), "cx_total")).To(Equal("2"))
		st := statValues(s, `^dns_cache\.sni_cache\.`)
		Expect(st).To(HaveKeyWithValue("dns_cache.sni_cache.host_added", "2"))
		Expect(st).To(HaveKeyWithValue("dns_cache.sni_cache.num_hosts", "2"))

		By("a server name that does not resolve gets no upstream")
		_, err = tlsThrough(dfpPort, "nowhere.test")
		Expect(err).To(HaveOccurred())
		Expect(statValue(s, "cluster.dfp_tcp.upstream_cx_none_healthy")).To(Equal("1"))

		By("sni_cluster picks the cluster named by the server name, tcp_proxy's own without one")
		Expect(tlsThrough(sniPort, "beta.test")).To(Equal("B sni=beta.test"))
		Expect(tlsThrough(sniPort, "alpha.test")).To(Equal("A sni=alpha.test"))
		Expect(tlsThrough(sniPort, "")).To(Equal("C sni="))
		Expect(statValue(s, "cluster.beta.test.upstream_cx_total")).To(Equal("1"))
		Expect(statValue(s, "cluster.fallback.upstream_cx_total")).To(Equal("1"))
	})

	It("bounds the requests waiting for resolutions, times slow resolutions out, and forgets hosts unused for host_ttl", func() {
		silent := startDNSServer()
		silent.silent.Store(true)
		dns := startDNSServer()
		lns, up := listenSamePort("127.0.0.1")
		serveHost(lns[0], "A", nil)
		dns.set("alpha.test", "127.0.0.1")

		dir := newDir()
		logPath := filepath.Join(dir, "access.log")
		slowPort, shortPort := freePort(), freePort()
		slow := dfpCache("slow", silent.port, ", dns_query_timeout: 1s, dns_cache_circuit_breaker: {max_pending_requests: 1}")
		short := dfpCache("short", dns.port, ", host_ttl: 1s, dns_min_refresh_rate: 1s")
		s := Start(dir, bootstrapOf(
			[]string{dfpListener("slow", slowPort, slow, "dfp_slow", "x", logPath), dfpListener("short", shortPort, short, "dfp_short", "x", logPath)},
			[]string{dfpCluster("dfp_slow", slow, ""), dfpCluster("dfp_short", short, "")}), "--file-flush-interval-msec", "50")

		By("a second request while one waits for the DNS is refused")
		type answer struct {
			code int
			body string
		}
		first := make(chan answer, 1)
		go func() {
			defer GinkgoRecover()
			code, body := dfpRequest(slowPort, "slow.test", "/")
			first <- answer{code, body}
		}()
		Eventually(func() string { return statValue(s, "dns_cache.slow.circuit_breakers.rq_pending_open") }).Should(Equal("1"))
		code, body := dfpRequest(slowPort, "other.test", "/")
		Expect(code).To(Equal(503))
		Expect(body).To(Equal("Dynamic forward proxy pending request overflow"))

		By("the waiting request fails once dns_query_timeout passes")
		var a answer
		Eventually(first, 10*time.Second).Should(Receive(&a))
		Expect(a).To(Equal(answer{503, "DNS resolution failure"}))
		Eventually(func() string { return readFile(logPath) }).Should(And(
			MatchRegexp(`(?m)^other.test 503 - dynamic_forward_proxy_pending_request_overflow$`),
			MatchRegexp(`(?m)^slow.test 503 DF dns_resolution_failure\{.*resolve_timeout.*\}$`)))
		st := statValues(s, `^dns_cache\.slow\.`)
		Expect(st).To(HaveKeyWithValue("dns_cache.slow.dns_query_timeout", "1"))
		Expect(st).To(HaveKeyWithValue("dns_cache.slow.dns_query_failure", "1"))
		Expect(st).To(HaveKeyWithValue("dns_cache.slow.dns_rq_pending_overflow", "1"))
		Expect(st).To(HaveKeyWithValue("dns_cache.slow.circuit_breakers.rq_pending_open", "0"))

		By("an unused host leaves the cache and the cluster after host_ttl")
		alpha := fmt.Sprintf("alpha.test:%d", up)
		code, body = dfpRequest(shortPort, alpha, "/")
		Expect(code).To(Equal(200), body)
		Expect(hostLine(s.Get("/clusters").Body, "dfp_short", fmt.Sprintf("127.0.0.1:%d", up), "hostname")).To(Equal(alpha))
		Eventually(func() string { return statValue(s, "dns_cache.short.host_removed") }, 10*time.Second).Should(Equal("1"))
		Expect(statValue(s, "dns_cache.short.num_hosts")).To(Equal("0"))
		Eventually(func() string {
			return hostLine(s.Get("/clusters").Body, "dfp_short", fmt.Sprintf("127.0.0.1:%d", up), "hostname")
		}).Should(Equal("<missing>"))

		By("it comes back when asked for again")
		code, body = dfpRequest(shortPort, alpha, "/")
		Expect(code).To(Equal(200), body)
		Expect(statValue(s, "dns_cache.short.host_added")).To(Equal("2"))
	})
})
