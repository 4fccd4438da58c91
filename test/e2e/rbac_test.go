package e2e

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

const (
	httpRBACType = "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC"
	netRBACType  = "type.googleapis.com/envoy.extensions.filters.network.rbac.v3.RBAC"
)

// rbacHTTPBootstrap is a connection manager (stat prefix edge, logging
// the response code, details and flags) with two RBAC filters in front of
// an upstream: "envoy.filters.http.rbac" ALLOWs reads of /public, /admin
// to clients that x-forwarded-for places in 10.0.0.0/8, /local to
// 127.0.0.1 and anything to x-team: blue, with DENY shadow rules on
// DELETE; "rbac-deny" DENYs requests with x-blocked. The route /open
// disables the first filter.
func rbacHTTPBootstrap(port, upPort int) string {
	const perRoute = "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBACPerRoute"
	return proxySpec{
		Port: port,
		HCM: `{stat_prefix: edge, access_log: [` + stdoutLog("RBACLOG %REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_CODE_DETAILS% %RESPONSE_FLAGS% "+
			"%DYNAMIC_METADATA(envoy.filters.http.rbac:dry_shadow_engine_result)% %DYNAMIC_METADATA(envoy.filters.http.rbac:dry_shadow_effective_policy_id)%\n") + `]}`,
		Routes: `[{match: {prefix: /open}, route: {cluster: up}, typed_per_filter_config: {envoy.filters.http.rbac: ` + withType(perRoute, `{}`) + `}},
			{match: {prefix: /}, route: {cluster: up}}]`,
		Filters: `[` + httpFilter("envoy.filters.http.rbac", httpRBACType, `{
			rules: {action: ALLOW, policies: {
				public-read: {permissions: [{and_rules: {rules: [{header: {name: ":method", string_match: {exact: GET}}}, {url_path: {path: {prefix: /public/}}}]}}], principals: [{any: true}]},
				admin: {permissions: [{url_path: {path: {prefix: /admin}}}], principals: [{remote_ip: {address_prefix: 10.0.0.0, prefix_len: 8}}]},
				local: {permissions: [{url_path: {path: {exact: /local}}}], principals: [{source_ip: {address_prefix: 127.0.0.1, prefix_len: 32}}]},
				elsewhere: {permissions: [{url_path: {path: {exact: /elsewhere}}}], principals: [{direct_remote_ip: {address_prefix: 192.0.2.0, prefix_len: 24}}]},
				blue-team: {permissions: [{any: true}], principals: [{header: {name: x-team, string_match: {exact: blue}}}]}}},
			shadow_rules: {action: DENY, policies: {no-delete: {permissions: [{header: {name: ":method", string_match: {exact: DELETE}}}], principals: [{any: true}]}}},
			shadow_rules_stat_prefix: dry_}`) + `,` +
			httpFilter("rbac-deny", httpRBACType, `{rules_stat_prefix: deny_, rules: {action: DENY, policies: {
				blocked client: {permissions: [{any: true}], principals: [{header: {name: x-blocked, present_match: true}}]}}}}`) + `]`,
		Clusters: []proxyCluster{{Name: "up", Port: upPort}},
	}.YAML()
}

var _ = Describe("The RBAC HTTP filter", func() {
	It("allows and denies by path, method, header and source addresses with Envoy's 403, details and stats; shadow rules only count, a route disables it", func() {
		up := portNum(httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, "upstream")
		}), false))
		port := freePort()
		s := Start(newDir(), rbacHTTPBootstrap(port, up), "--file-flush-interval-msec", "50")
		client := &http.Client{Timeout: 5 * time.Second}
		do := func(method, path string, kv ...string) Response {
			GinkgoHelper()
			h := http.Header{}
			for i := 0; i+1 < len(kv); i += 2 {
				h.Set(kv[i], kv[i+1])
			}
			return httpDo(client, method, listenerURL(port, path), nil, h)
		}
		allowed := func(r Response) {
			GinkgoHelper()
			Expect(r.Status).To(Equal(200), r.Body)
			Expect(r.Body).To(Equal("upstream"))
		}
		denied := func(r Response) {
			GinkgoHelper()
			Expect(r.Status).To(Equal(403))
			Expect(r.Body).To(Equal("RBAC: access denied"))
		}

		allowed(do("GET", "/public/index.html?lang=en"))                  // 1 public-read
		denied(do("POST", "/public/form"))                                // method
		denied(do("GET", "/admin/users"))                                 // 127.0.0.1 is not in 10/8
		allowed(do("GET", "/admin/users", "X-Forwarded-For", "10.1.2.3")) // remote_ip from x-forwarded-for
		allowed(do("GET", "/local"))                                      // source_ip
		allowed(do("GET", "/local", "X-Forwarded-For", "10.1.2.3"))       // source_ip ignores x-forwarded-for
		denied(do("GET", "/elsewhere", "X-Forwarded-For", "192.0.2.7"))   // direct_remote_ip is the socket's peer
		allowed(do("DELETE", "/anything", "X-Team", "blue"))              // header principal; shadow would deny
		denied(do("GET", "/public/x", "X-Blocked", "1"))                  // the DENY filter
		allowed(do("PUT", "/open/anything"))                              // per-route: disabled

		out := func() string { return s.Stdout() }
		// The shadow rules' result is in the dynamic metadata.
		Eventually(out).Should(ContainSubstring("RBACLOG /public/form 403 rbac_access_denied_matched_policy[none] - allowed -\n"))
		Eventually(out).Should(ContainSubstring("RBACLOG /public/x 403 rbac_access_denied_matched_policy[blocked_client] - allowed -\n"))
		Eventually(out).Should(ContainSubstring("RBACLOG /public/index.html?lang=en 200 via_upstream - allowed -\n"))
		Eventually(out).Should(ContainSubstring("RBACLOG /anything 200 via_upstream - denied no-delete\n"))
		Eventually(out).Should(ContainSubstring("RBACLOG /open/anything 200 via_upstream - - -\n"))

		for name, want := range map[string]string{
			// The first filter decided 9 requests (not /open's).
			"http.edge.rbac.allowed":             "6",
			"http.edge.rbac.denied":              "3",
			"http.edge.rbac.dry_.shadow_allowed": "8",
			"http.edge.rbac.dry_.shadow_denied":  "1",
			// The second saw the 7 the first let through.
			"http.edge.rbac.deny_.allowed": "6",
			"http.edge.rbac.deny_.denied":  "1",
		} {
			Expect(statValue(s, name)).To(Equal(want), name)
		}
	})
})

var _ = Describe("The RBAC network filter", func() {
	It("lets allowed connections through to tcp_proxy, closes denied ones (after delay_deny), and counts enforced and shadow decisions", func() {
		up := startTCPServer(echo)
		allowPort, denyPort := freePort(), freePort()
		config := rbacTCPBootstrap(up, allowPort, fmt.Sprintf(`{stat_prefix: tcp_allow, enforcement_type: CONTINUOUS,
				rules: {action: ALLOW, policies: {loopback: {permissions: [{destination_port: %d}], principals: [{source_ip: {address_prefix: 127.0.0.0, prefix_len: 8}}]}}},
				shadow_rules: {action: ALLOW, policies: {tls-only: {permissions: [{any: true}], principals: [{authenticated: {}}]}}}}`, allowPort),
			denyPort, `{stat_prefix: tcp_deny, delay_deny: 0.3s,
				rules: {action: DENY, policies: {everyone: {permissions: [{destination_port_range: {start: 1, end: 65536}}], principals: [{any: true}]}}}}`)
		s := Start(newDir(), config)

		c := dialTCP(allowPort)
		_, err := c.Write([]byte("hello"))
		Expect(err).NotTo(HaveOccurred())
		Expect(c.CloseWrite()).To(Succeed())
		got, err := io.ReadAll(c)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(got)).To(Equal("hello"))

		d := dialTCP(denyPort)
		start := time.Now()
		_, _ = d.Write([]byte("hello"))
		got, _ = io.ReadAll(d) // closed by the proxy, nothing echoed
		Expect(got).To(BeEmpty())
		Expect(time.Since(start)).To(BeNumerically(">=", 250*time.Millisecond), "closed before delay_deny")

		for name, want := range map[string]string{
			"tcp_allow.rbac.allowed":        "1",
			"tcp_allow.rbac.denied":         "0",
			"tcp_allow.rbac.shadow_denied":  "1",
			"tcp_allow.rbac.shadow_allowed": "0",
			"tcp_deny.rbac.denied":          "1",
			// tcp_proxy counts the denied connection too, as Envoy's
			// filter made for every connection of its chain does.
			"tcp.front.downstream_cx_total": "2",
		} {
			Expect(statValue(s, name)).To(Equal(want), name)
		}
	})
})

var _ = Describe("RBAC over mTLS", func() {
	It("matches authenticated principals against the client certificate's SANs in the network and HTTP filters", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		port := freePort()
		// The network filter admits clients with a certificate of the
		// cluster.local trust domain; the HTTP filter lets only the
		// frontend into /secure.
		hcm := `{name: envoy.filters.network.http_connection_manager, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager,
  stat_prefix: mtls, access_log: [` + stdoutLog("MTLSRBAC %REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_CODE_DETAILS%\n") + `],
  route_config: {virtual_hosts: [{name: all, domains: ["*"], routes: [{match: {prefix: /}, direct_response: {status: 200, body: {inline_string: secret}}}]}]},
  http_filters: [` + httpFilter("envoy.filters.http.rbac", httpRBACType, `{rules: {action: ALLOW, policies: {
    frontend-only: {permissions: [{url_path: {path: {prefix: /secure}}}], principals: [{authenticated: {principal_name: {exact: "`+clientSAN+`"}}}]},
    by-subject: {permissions: [{url_path: {path: {exact: /by-subject}}}], principals: [{authenticated: {principal_name: {exact: "CN=intruder,O=Outrigger tests"}}}]}}}}`) + `,
    {name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]}}`
		netRBAC := `{name: envoy.filters.network.rbac, typed_config: ` + withType(netRBACType, `{stat_prefix: mesh, rules: {action: ALLOW, policies: {
    trust-domain: {permissions: [{any: true}], principals: [{authenticated: {principal_name: {prefix: "spiffe://cluster.local/"}}}]}}}}`) + `}`
		chain := `{filters: [` + netRBAC + `, ` + hcm + `], transport_socket: ` + f.transportSocket("", `, validation_context: {trusted_ca: {filename: `+f.ca+`}}`) + `}`
		s := Start(dir, tlsBootstrap(port, "", []string{chain}), "--file-flush-interval-msec", "50")

		clientWith := func(cert, key string) *http.Client {
			GinkgoHelper()
			cfg := &tls.Config{RootCAs: f.caPool, ServerName: "localhost"}
			if cert != "" {
				pair, err := tls.LoadX509KeyPair(cert, key)
				Expect(err).NotTo(HaveOccurred())
				cfg.Certificates = []tls.Certificate{pair}
			}
			return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
		}
		url := func(path string) string { return fmt.Sprintf("https://127.0.0.1:%d%s", port, path) }
		frontend, intruder := clientWith(f.clientCert, f.clientKey), clientWith(f.otherClientCert, f.otherClientKy)

		r := httpDo(frontend, "GET", url("/secure/data"), nil, nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal("secret"))
		r = httpDo(intruder, "GET", url("/secure/data"), nil, nil)
		Expect(r.Status).To(Equal(403))
		Expect(r.Body).To(Equal("RBAC: access denied"))
		// The subject is matched after the SANs.
		Expect(httpDo(intruder, "GET", url("/by-subject"), nil, nil).Status).To(Equal(200))

		// Without a certificate the network filter closes the connection.
		_, err := clientWith("", "").Get(url("/secure/data"))
		Expect(err).To(HaveOccurred())

		Eventually(s.Stdout).Should(ContainSubstring("MTLSRBAC /secure/data 403 rbac_access_denied_matched_policy[none]\n"))
		Expect(statValue(s, "mesh.rbac.denied")).To(Equal("1"))
		Expect(statValue(s, "http.mtls.rbac.allowed")).To(Equal("2"))
		Expect(statValue(s, "http.mtls.rbac.denied")).To(Equal("1"))
		Expect(strings.Count(s.Stdout(), "MTLSRBAC ")).To(Equal(3))
	})
})

var _ = Describe("RBAC configuration errors", func() {
	It("names the field of each policy that does not compile, and of what Outrigger refuses", func() {
		config := proxySpec{
			Port: freePort(),
			Filters: `[` + httpFilter("envoy.filters.http.rbac", httpRBACType, `{
				rules: {policies: {
					bad-regex: {permissions: [{url_path: {path: {safe_regex: {regex: "(unclosed"}}}}], principals: [{any: true}]},
					bad-cidr: {permissions: [{any: true}], principals: [{or_ids: {ids: [{remote_ip: {address_prefix: 10.0.0.300, prefix_len: 8}}]}}]},
					empty-cel: {permissions: [{any: true}], principals: [{any: true}], condition: {id: 1}},
					comprehension: {permissions: [{any: true}], principals: [{any: true}], cel_config: {enable_string_concat: true},
						condition: {comprehension_expr: {iter_var: x, iter_range: {list_expr: {elements: [{const_expr: {int64_value: 1}}]}}, accu_var: a,
							accu_init: {const_expr: {bool_value: false}}, loop_condition: {const_expr: {bool_value: true}}, loop_step: {ident_expr: {name: a}}, result: {ident_expr: {name: a}}}}}}}}`) + `]`,
			Clusters: []proxyCluster{{Name: "up", Port: freePort()}},
		}.YAML()
		r, _ := validate("bootstrap.yaml", config)
		Expect(r.ExitCode).To(Equal(1), "stdout: %s", r.Stdout)
		filter := `static_resources\.listeners\[0\]\.filter_chains\[0\]\.filters\[0\]\.typed_config\.http_filters\[0\]\.typed_config\.`
		Expect(r.Stderr).To(MatchRegexp(filter + `rules\.policies\["comprehension"\]\.condition: comprehension expressions .* are disabled, as in Envoy`))
		Expect(r.Stderr).To(MatchRegexp(filter + `rules\.policies\["bad-regex"\]\.permissions\[0\]\.url_path\.path\.safe_regex\.regex: error parsing regexp`))
		Expect(r.Stderr).To(MatchRegexp(filter + `rules\.policies\["empty-cel"\]\.condition: empty expression`))
		Expect(r.Stderr).To(MatchRegexp(filter + `rules\.policies\["bad-cidr"\]\.principals\[0\]\.or_ids\.ids\[0\]\.remote_ip\.address_prefix: "10\.0\.0\.300" is not an IP address`))
	})
})

// rbacTCPBootstrap is two listeners in front of the TCP server up, each a
// network RBAC filter (its typed config, YAML) then tcp_proxy: "allow" on
// allowPort and "deny" on denyPort.
func rbacTCPBootstrap(up, allowPort int, allowRBAC string, denyPort int, denyRBAC string) string {
	chain := func(rbac string) string {
		return `{filters: [{name: envoy.filters.network.rbac, typed_config: ` + withType(netRBACType, rbac) + `},
			{name: envoy.filters.network.tcp_proxy, typed_config: ` + withType("type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy", `{stat_prefix: front, cluster: echo}`) + `}]}`
	}
	return fmt.Sprintf(`
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
static_resources:
  clusters: [%s]
  listeners:
  - name: allow
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains: [%s]
  - name: deny
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains: [%s]
`, tcpCluster("echo", up), allowPort, chain(allowRBAC), denyPort, chain(denyRBAC))
}
