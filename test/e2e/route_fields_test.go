package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// seenHeaders are the request headers routeFieldsUpstream reports.
var seenHeaders = []string{"host", "x-envoy-original-host", "x-forwarded-host", "x-forwarded-proto",
	"x-envoy-attempt-count", "x-internal-token", "x-keep"}

// routeFieldsUpstream answers with the headers of seenHeaders as it
// received them, one "name=value" line each ("name=" when absent, values of
// a repeated header joined by ",").
func routeFieldsUpstream() string {
	return httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		for _, k := range seenHeaders {
			v := strings.Join(r.Header.Values(k), ",")
			if k == "host" {
				v = r.Host
			}
			fmt.Fprintf(w, "%s=%s\n", k, v)
		}
	}), false)
}

// rawH2Upstream is an h2c upstream (prior knowledge) written on the frame
// layer, so that it can report the pseudo-headers it received, which Go's
// HTTP/2 server does not expose: it answers each request with its
// ":scheme=..." and "x-forwarded-proto=..." lines. It serves bodiless
// requests, which is all the spec sends.
func rawH2Upstream() string {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(ln.Close)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serveRawH2(c)
		}
	}()
	return ln.Addr().String()
}

// serveRawH2 serves one connection of rawH2Upstream until it fails or
// closes.
func serveRawH2(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(c, preface); err != nil || string(preface) != http2.ClientPreface {
		return
	}
	fr := http2.NewFramer(c, c)
	if fr.WriteSettings() != nil {
		return
	}
	dec := hpack.NewDecoder(4096, nil)
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() && fr.WriteSettingsAck() != nil {
				return
			}
		case *http2.PingFrame:
			if !f.IsAck() && fr.WritePing(true, f.Data) != nil {
				return
			}
		case *http2.HeadersFrame:
			fields, err := dec.DecodeFull(f.HeaderBlockFragment())
			if err != nil {
				return
			}
			var body strings.Builder
			for _, want := range []string{":scheme", "x-forwarded-proto"} {
				for _, hf := range fields {
					if hf.Name == want {
						fmt.Fprintf(&body, "%s=%s\n", hf.Name, hf.Value)
					}
				}
			}
			var blk bytes.Buffer
			enc := hpack.NewEncoder(&blk)
			_ = enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
			_ = enc.WriteField(hpack.HeaderField{Name: "content-length", Value: fmt.Sprint(body.Len())})
			if fr.WriteHeaders(http2.HeadersFrameParam{StreamID: f.StreamID, BlockFragment: blk.Bytes(), EndHeaders: true}) != nil ||
				fr.WriteData(f.StreamID, true, []byte(body.String())) != nil {
				return
			}
		}
	}
}

// seen parses routeFieldsUpstream's answer.
func seen(body string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
		k, v, _ := strings.Cut(line, "=")
		out[k] = v
	}
	return out
}

// routeFieldsBootstrap has two listeners: edge (use_remote_address, the
// loopback address internal, scheme_to_overwrite https) with every route of
// the spec, and mesh (match_upstream) with one route. Clusters: dns (a
// STRICT_DNS name), named (a STATIC endpoint with a hostname), plain (one
// without) and down (nothing listens).
func routeFieldsBootstrap(edge, mesh, dnsPort int, upstream, downAddr, h2Addr string) string {
	GinkgoHelper()
	up := portNum(upstream)
	spec := proxySpec{
		Port:     edge,
		Listener: "{name: edge}",
		Top:      "{layered_runtime: {layers: [{name: admin, admin_layer: {}}]}}",
		HCM: `{stat_prefix: edge, use_remote_address: true,
			internal_address_config: {cidr_ranges: [{address_prefix: 127.0.0.1, prefix_len: 32}]},
			scheme_header_transformation: {scheme_to_overwrite: https},
			route_config: {internal_only_headers: [X-Internal-Token], virtual_hosts: [
				{name: counted, domains: ["*"], include_request_attempt_count: true, include_attempt_count_in_response: true,
				 virtual_clusters: [{name: posts, headers: [{name: ":method", string_match: {exact: POST}}]}],
				 routes: [
					{match: {prefix: /auto-dns}, route: {cluster: dns, auto_host_rewrite: true, append_x_forwarded_host: true}},
					{match: {prefix: /auto-static}, route: {cluster: named, auto_host_rewrite: true}},
					{match: {prefix: /auto-plain}, route: {cluster: plain, auto_host_rewrite: true, append_x_forwarded_host: true}},
					{match: {prefix: /by-header}, route: {cluster: plain, host_rewrite_header: X-Target}},
					{match: {prefix: /by-path/}, route: {cluster: plain, append_x_forwarded_host: true,
						host_rewrite_path_regex: {pattern: {regex: "^/by-path/([^/]+)/.*$"}, substitution: '\1.internal'}}},
					{match: {prefix: /literal}, route: {cluster: plain, host_rewrite_literal: fixed.internal}},
					{match: {prefix: /canary, runtime_fraction: {default_value: {numerator: 0}, runtime_key: routing.canary}},
					 direct_response: {status: 200, body: {inline_string: canary}}},
					{match: {prefix: /canary}, direct_response: {status: 200, body: {inline_string: stable}}},
					{match: {prefix: /scheme, headers: [{name: ":scheme", string_match: {exact: https}}]},
					 direct_response: {status: 200, body: {inline_string: https}}},
					{match: {prefix: /down}, route: {cluster: down}, stat_prefix: down},
					{match: {prefix: /direct}, direct_response: {status: 200, body: {inline_string: direct}}, stat_prefix: direct},
					{match: {prefix: /h2}, route: {cluster: h2}},
					{match: {prefix: /}, route: {cluster: plain}, stat_prefix: root}]},
				{name: uncounted, domains: [uncounted], routes: [{match: {prefix: /}, route: {cluster: plain}}]}]}}`,
		Clusters: []proxyCluster{
			{Name: "dns", Port: up, Endpoint: "{endpoint: {address: {socket_address: {address: backend.test}}}}",
				Extra: "{type: STRICT_DNS, dns_lookup_family: V4_ONLY, typed_dns_resolver_config: " + caresResolver(dnsPort, "") + "}"},
			{Name: "named", Port: up, Endpoint: "{endpoint: {hostname: static.example}}"},
			{Name: "plain", Port: up},
			{Name: "down", Port: portNum(downAddr)},
			{Name: "h2", Port: portNum(h2Addr), Extra: h2cOptions()},
		},
	}
	spec.More = []proxySpec{{
		Port:     mesh,
		Listener: "{name: mesh}",
		HCM:      "{stat_prefix: mesh, scheme_header_transformation: {match_upstream: true}, route_config: {internal_only_headers: [x-internal-token]}}",
		Routes:   "[{match: {prefix: /h2}, route: {cluster: h2}}, {match: {prefix: /}, route: {cluster: plain}}]",
	}}
	return spec.YAML()
}

var _ = Describe("Route and connection manager fields", func() {
	var (
		s          *Sidecar
		edge, mesh int
	)
	client := &http.Client{Timeout: 5 * time.Second}
	get := func(port int, path string, h http.Header) Response {
		GinkgoHelper()
		return httpDo(client, "GET", listenerURL(port, path), nil, h)
	}

	BeforeEach(func() {
		dns := startDNSServer()
		up := routeFieldsUpstream()
		dns.set("backend.test", "127.0.0.1")
		edge, mesh = freePort(), freePort()
		h2 := rawH2Upstream()
		// Taken last, so that no listener of this spec takes it again.
		down := fmt.Sprintf("127.0.0.1:%d", freePort())
		s = Start(newDir(), routeFieldsBootstrap(edge, mesh, dns.port, up, down, h2))
		// The DNS cluster has its host once the first answer came.
		Eventually(func() int { return get(edge, "/auto-dns", nil).Status }, 10*time.Second, 100*time.Millisecond).Should(Equal(200))
	})

	It("rewrites the host as Envoy does: the chosen host's name, a header, the path; the original in x-envoy-original-host and x-forwarded-host", func() {
		authority := fmt.Sprintf("127.0.0.1:%d", edge)
		for name, client := range httpClients() {
			By(name)
			do := func(path string, h http.Header) map[string]string {
				GinkgoHelper()
				r := httpDo(client, "GET", listenerURL(edge, path), nil, h)
				Expect(r.Status).To(Equal(200), path)
				return seen(r.Body)
			}
			got := do("/auto-dns", http.Header{"X-Forwarded-Host": {"client.example"}})
			Expect(got["host"]).To(Equal("backend.test"), "a DNS cluster's host is named by its DNS name")
			Expect(got["x-envoy-original-host"]).To(Equal(authority))
			Expect(got["x-forwarded-host"]).To(Equal("client.example," + authority))

			// The original host already last in x-forwarded-host is not
			// appended again (entries compared as they are, spaces
			// included, as Envoy compares them).
			got = do("/auto-dns", http.Header{"X-Forwarded-Host": {"a.example," + authority}})
			Expect(got["x-forwarded-host"]).To(Equal("a.example," + authority))
			got = do("/auto-dns", http.Header{"X-Forwarded-Host": {"a.example, " + authority}})
			Expect(got["x-forwarded-host"]).To(Equal("a.example, " + authority + "," + authority))

			got = do("/auto-static", nil)
			Expect(got["host"]).To(Equal("static.example"), "a STATIC endpoint's hostname")
			Expect(got["x-envoy-original-host"]).To(Equal(authority))
			Expect(got["x-forwarded-host"]).To(BeEmpty(), "append_x_forwarded_host is off")

			got = do("/auto-plain", nil)
			Expect(got["host"]).To(Equal(authority), "an endpoint without a hostname leaves the host alone")
			Expect(got["x-envoy-original-host"]).To(BeEmpty())
			Expect(got["x-forwarded-host"]).To(BeEmpty())

			got = do("/by-header", http.Header{"X-Target": {"from-header.internal"}})
			Expect(got["host"]).To(Equal("from-header.internal"))
			Expect(got["x-envoy-original-host"]).To(Equal(authority))
			got = do("/by-header", nil)
			Expect(got["host"]).To(Equal(authority), "no header, no rewrite")
			Expect(got["x-envoy-original-host"]).To(BeEmpty())

			got = do("/by-path/orders/list?host=evil", nil)
			Expect(got["host"]).To(Equal("orders.internal"))
			Expect(got["x-forwarded-host"]).To(Equal(authority))

			got = do("/literal", nil)
			Expect(got["host"]).To(Equal("fixed.internal"))
			Expect(got["x-envoy-original-host"]).To(Equal(authority))
		}
	})

	It("strips internal_only_headers from requests that are not internal, and overwrites the scheme", func() {
		h := http.Header{"X-Internal-Token": {"secret"}, "X-Keep": {"kept"}}
		By("an internal request (a trusted loopback client) keeps them")
		got := seen(get(edge, "/", h).Body)
		Expect(got["x-internal-token"]).To(Equal("secret"))
		Expect(got["x-keep"]).To(Equal("kept"))

		By("a request relayed for an outside client loses them")
		h.Set("X-Forwarded-For", "203.0.113.9")
		got = seen(get(edge, "/", h).Body)
		Expect(got["x-internal-token"]).To(BeEmpty())
		Expect(got["x-keep"]).To(Equal("kept"))

		By("without use_remote_address or internal addresses, every request is external")
		h.Del("X-Forwarded-For")
		got = seen(get(mesh, "/", h).Body)
		Expect(got["x-internal-token"]).To(BeEmpty())

		By("scheme_to_overwrite: the upstream's x-forwarded-proto, and the scheme routes see")
		Expect(seen(get(edge, "/", nil).Body)["x-forwarded-proto"]).To(Equal("https"))
		r := get(edge, "/scheme", nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal("https"))
		By("match_upstream leaves x-forwarded-proto as the connection manager set it")
		Expect(seen(get(mesh, "/", nil).Body)["x-forwarded-proto"]).To(Equal("http"))
		By("an HTTP/2 upstream gets the :scheme of its plaintext transport")
		r = get(mesh, "/h2", nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal(":scheme=http\nx-forwarded-proto=http\n"))
		// Envoy would send :scheme https here (docs/compat.md).
		r = get(edge, "/h2", nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal(":scheme=http\nx-forwarded-proto=https\n"))
	})

	It("matches runtime_fraction routes by their share, which the runtime key overrides", func() {
		count := func() map[string]int {
			out := map[string]int{}
			for range 200 {
				r := get(edge, "/canary", nil)
				Expect(r.Status).To(Equal(200))
				out[r.Body]++
			}
			return out
		}
		Expect(count()).To(Equal(map[string]int{"stable": 200}), "a default share of 0")
		Expect(s.Post("/runtime_modify?routing.canary=100").Status).To(Equal(200))
		Expect(count()).To(Equal(map[string]int{"canary": 200}))
		Expect(s.Post("/runtime_modify?routing.canary=50").Status).To(Equal(200))
		half := count()
		// Each side is missed by all 200 requests with a chance of 2^-200.
		Expect(half["canary"]).To(BeNumerically(">", 0))
		Expect(half["stable"]).To(BeNumerically(">", 0))
		Expect(half["canary"] + half["stable"]).To(Equal(200))
	})

	It("sends x-envoy-attempt-count upstream and back where the virtual host asks for it", func() {
		r := get(edge, "/", nil)
		Expect(r.Status).To(Equal(200))
		Expect(seen(r.Body)["x-envoy-attempt-count"]).To(Equal("1"))
		Expect(r.Header.Get("X-Envoy-Attempt-Count")).To(Equal("1"))

		By("the proxy's answer to an upstream that cannot be reached carries it too")
		r = get(edge, "/down", nil)
		Expect(r.Status).To(Equal(503))
		Expect(r.Header.Get("X-Envoy-Attempt-Count")).To(Equal("1"))

		By("not on a direct response, nor in another virtual host")
		r = get(edge, "/direct", nil)
		Expect(r.Body).To(Equal("direct"))
		Expect(r.Header.Values("X-Envoy-Attempt-Count")).To(BeEmpty())
		req, err := http.NewRequest("GET", listenerURL(edge, "/"), nil)
		Expect(err).NotTo(HaveOccurred())
		req.Host = "uncounted"
		resp, err := client.Do(req)
		Expect(err).NotTo(HaveOccurred())
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.StatusCode).To(Equal(200))
		Expect(seen(string(body))["host"]).To(Equal("uncounted"))
		Expect(seen(string(body))["x-envoy-attempt-count"]).To(BeEmpty())
		Expect(resp.Header.Values("X-Envoy-Attempt-Count")).To(BeEmpty())
	})

	It("keeps Envoy's stats per virtual cluster (the catch-all other included) and per route stat_prefix", func() {
		for range 2 {
			Expect(httpDo(client, "POST", listenerURL(edge, "/"), strings.NewReader("x"), nil).Status).To(Equal(200))
		}
		Expect(get(edge, "/down", nil).Status).To(Equal(503))
		Expect(get(edge, "/direct", nil).Status).To(Equal(200))
		want := map[string]string{
			"vhost.counted.vcluster.posts.upstream_rq_total":     "2",
			"vhost.counted.vcluster.posts.upstream_rq_completed": "2",
			"vhost.counted.vcluster.posts.upstream_rq_2xx":       "2",
			"vhost.counted.vcluster.posts.upstream_rq_200":       "2",
			"vhost.counted.vcluster.posts.upstream_rq_timeout":   "0",
			"vhost.counted.vcluster.posts.upstream_rq_retry":     "0",
			// GET /auto-dns of BeforeEach went upstream too: the
			// catch-all has it and the 503 of /down.
			"vhost.counted.vcluster.other.upstream_rq_completed": "2",
			"vhost.counted.vcluster.other.upstream_rq_200":       "1",
			"vhost.counted.vcluster.other.upstream_rq_503":       "1",
			"vhost.counted.vcluster.other.upstream_rq_5xx":       "1",
			"vhost.counted.route.root.upstream_rq_total":         "2",
			"vhost.counted.route.root.upstream_rq_200":           "2",
			"vhost.counted.route.down.upstream_rq_completed":     "1",
			"vhost.counted.route.down.upstream_rq_503":           "1",
			// A direct response never goes upstream.
			"vhost.counted.route.direct.upstream_rq_total":     "0",
			"vhost.counted.route.direct.upstream_rq_completed": "0",
		}
		for name, v := range want {
			Expect(httpStat(s, name)).To(Equal(v), name)
		}
		Expect(httpStat(s, "vhost.counted.route.direct.upstream_rq_200")).To(BeEmpty(), "codes appear when seen")
		Expect(httpStat(s, "vhost.uncounted.vcluster.other.upstream_rq_total")).To(BeEmpty(), "a virtual host without virtual clusters has none")
		Eventually(func() string { return httpStat(s, "vhost.counted.vcluster.posts.upstream_rq_time") }, 5*time.Second, 100*time.Millisecond).
			Should(ContainSubstring("P50"), "the upstream time histogram")
		By("Prometheus sees the virtual host, virtual cluster and route as tags")
		prom := s.Get("/stats/prometheus").Body
		Expect(prom).To(MatchRegexp(`proxy_vhost_vcluster_upstream_rq_total\{proxy_virtual_cluster="posts",proxy_virtual_host="counted"\} 2`))
		Expect(prom).To(MatchRegexp(`proxy_vhost_route_upstream_rq_total\{proxy_virtual_host="counted",proxy_route="root"\} 2`))
	})
})
