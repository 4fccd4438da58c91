package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// rbacSandbox is Envoy's rbac sandbox (envoyproxy/examples,
// rbac/envoy.yaml) as published, with its listener, backend and admin
// addresses moved to loopback ports: an RBAC matcher that denies
// requests whose referer is not Envoy's documentation.
func rbacSandbox(port, backend int) string {
	b, err := os.ReadFile("testdata/rbac_sandbox.yaml")
	Expect(err).NotTo(HaveOccurred())
	return strings.NewReplacer("0.0.0.0", "127.0.0.1", "port_value: 10000", fmt.Sprintf("port_value: %d", port),
		"address: backend", "address: 127.0.0.1", "port_value: 8080", fmt.Sprintf("port_value: %d", backend),
		"port_value: 10001", "port_value: 0").Replace(string(b))
}

// clientFrom is an HTTP client whose connections leave from the loopback
// address source.
func clientFrom(source string) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		}}}
}

// rbacAction is an on_match (YAML) of the matcher form: the RBAC action
// name does.
func rbacAction(name, does string) string {
	return `{action: {name: action, typed_config: {"@type": type.googleapis.com/envoy.config.rbac.v3.Action, name: "` + name + `", action: ` + does + `}}}`
}

// matchInput is a matcher input (YAML) of the type, with its fields.
func matchInput(typ, fields string) string {
	return `{name: input, typed_config: {"@type": type.googleapis.com/` + typ + fields + `}}`
}

// expectStatValues checks the values of stats by their names.
func expectStatValues(s *Sidecar, want map[string]string) {
	GinkgoHelper()
	for name, v := range want {
		Expect(statValue(s, name)).To(Equal(v), name)
	}
}

const networkInputs = "envoy.extensions.matching.common_inputs.network.v3."

var _ = Describe("RBAC's matcher form", func() {
	It("loads Envoy's rbac sandbox and serves it: the documentation's referer goes through, others get the 403", func() {
		up := portNum(httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, "backend")
		}), false))
		port := freePort()
		config := rbacSandbox(port, up)
		r, _ := validate("envoy.yaml", config)
		Expect(r.ExitCode).To(Equal(0), "stderr: %s", r.Stderr)
		s := Start(newDir(), config)
		client := &http.Client{Timeout: 5 * time.Second}
		get := func(referer string) Response {
			GinkgoHelper()
			h := http.Header{}
			if referer != "" {
				h.Set("Referer", referer)
			}
			return httpDo(client, "GET", listenerURL(port, "/"), nil, h)
		}
		ok := get("https://www.envoyproxy.io/docs/envoy/latest/configuration/")
		Expect(ok.Status).To(Equal(200))
		Expect(ok.Body).To(Equal("backend"))
		for _, referer := range []string{"https://example.com/", ""} {
			denied := get(referer)
			Expect(denied.Status).To(Equal(403), referer)
			Expect(denied.Body).To(Equal("RBAC: access denied"))
		}
		Expect(statValue(s, "http.ingress_http.rbac.allowed")).To(Equal("1"))
		Expect(statValue(s, "http.ingress_http.rbac.denied")).To(Equal("2"))
	})

	It("allows and denies HTTP requests by header and by the connection's source IP (the IP matcher), counts its shadow matcher and names the action in the 403's details", func() {
		up := portNum(httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, "upstream")
		}), false))
		port := freePort()
		sourceIP := matchInput(networkInputs+"SourceIPInput", "")
		header := func(name string) string {
			return matchInput("envoy.type.matcher.v3.HttpRequestHeaderMatchInput", ", header_name: "+name)
		}
		s := Start(newDir(), proxySpec{
			Port: port,
			HCM: `{stat_prefix: edge, use_remote_address: true, access_log: [` + stdoutLog("RBACM %REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_CODE_DETAILS% %RESPONSE_FLAGS% "+
				"%DYNAMIC_METADATA(envoy.filters.http.rbac:dry_shadow_engine_result)% %DYNAMIC_METADATA(envoy.filters.http.rbac:dry_shadow_effective_policy_id)%\n") + `]}`,
			Filters: `[` + httpFilter("envoy.filters.http.rbac", httpRBACType, `{
				matcher: {
					matcher_list: {matchers: [{
						predicate: {single_predicate: {input: `+header("x-blocked")+`, value_match: {exact: "yes"}}},
						on_match: `+rbacAction("blocked client", "DENY")+`}]},
					on_no_match: {matcher: {matcher_tree: {input: `+sourceIP+`, custom_match: {name: ip, typed_config: {
						"@type": type.googleapis.com/xds.type.matcher.v3.IPMatcher, range_matchers: [
							{ranges: [{address_prefix: 127.0.0.1, prefix_len: 32}], on_match: `+rbacAction("local", "ALLOW")+`},
							{ranges: [{address_prefix: 127.0.0.0, prefix_len: 8}], on_match: `+rbacAction("other-loopback", "DENY")+`}]}}}}}},
				shadow_matcher: {
					matcher_tree: {input: `+header("x-env")+`, exact_match_map: {map: {prod: `+rbacAction("prod-writes", "DENY")+`}}},
					on_no_match: `+rbacAction("other-env", "ALLOW")+`},
				shadow_rules_stat_prefix: dry_}`) + `]`,
			Clusters: []proxyCluster{{Name: "up", Port: up}},
		}.YAML(), "--file-flush-interval-msec", "50")

		do := func(client *http.Client, path string, kv ...string) Response {
			GinkgoHelper()
			h := http.Header{}
			for i := 0; i+1 < len(kv); i += 2 {
				h.Set(kv[i], kv[i+1])
			}
			return httpDo(client, "GET", listenerURL(port, path), nil, h)
		}
		local, other := clientFrom("127.0.0.1"), clientFrom("127.0.0.2")
		r := do(local, "/a", "X-Env", "prod")
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal("upstream"))
		r = do(local, "/b", "X-Blocked", "yes")
		Expect(r.Status).To(Equal(403))
		Expect(r.Body).To(Equal("RBAC: access denied"))
		// The source IP is the client's as the connection manager
		// trusts it: with use_remote_address, the connection's, whatever
		// x-forwarded-for the client sends.
		Expect(do(other, "/c", "X-Forwarded-For", "127.0.0.1").Status).To(Equal(403))

		out := func() string { return s.Stdout() }
		Eventually(out).Should(ContainSubstring("RBACM /a 200 via_upstream - denied prod-writes\n"))
		Eventually(out).Should(ContainSubstring("RBACM /b 403 rbac_access_denied_matched_policy[blocked_client] - allowed other-env\n"))
		Eventually(out).Should(ContainSubstring("RBACM /c 403 rbac_access_denied_matched_policy[other-loopback] - allowed other-env\n"))
		expectStatValues(s, map[string]string{
			"http.edge.rbac.allowed":             "1",
			"http.edge.rbac.denied":              "2",
			"http.edge.rbac.dry_.shadow_allowed": "2",
			"http.edge.rbac.dry_.shadow_denied":  "1",
		})
	})

	It("decides tcp_proxy connections in the network filter by source IP and destination port, and counts its shadow matcher", func() {
		up := startTCPServer(echo)
		allowPort, denyPort := freePort(), freePort()
		config := rbacTCPBootstrap(up, allowPort, `{stat_prefix: tcp_allow, shadow_rules_stat_prefix: dry_,
				matcher: {matcher_tree: {input: `+matchInput(networkInputs+"SourceIPInput", "")+`, custom_match: {name: ip, typed_config: {
					"@type": type.googleapis.com/xds.type.matcher.v3.IPMatcher, range_matchers: [
						{ranges: [{address_prefix: 127.0.0.1, prefix_len: 32}], on_match: `+rbacAction("local", "ALLOW")+`}]}}}},
				shadow_matcher: {matcher_tree: {input: `+matchInput(networkInputs+"ServerNameInput", "")+`, exact_match_map: {map: {api.example.com: `+rbacAction("sni", "ALLOW")+`}}},
					on_no_match: `+rbacAction("no-sni", "DENY")+`}}`,
			denyPort, fmt.Sprintf(`{stat_prefix: tcp_deny,
				matcher: {matcher_list: {matchers: [{predicate: {single_predicate: {input: `+matchInput(networkInputs+"DestinationPortInput", "")+`, value_match: {exact: "%d"}}},
					on_match: `+rbacAction("closed port", "DENY")+`}]},
					on_no_match: `+rbacAction("open port", "ALLOW")+`}}`, denyPort))
		r, _ := validate("bootstrap.yaml", config)
		Expect(r.ExitCode).To(Equal(0), "stderr: %s", r.Stderr)
		s := Start(newDir(), config)

		echoed := func(c net.Conn) string {
			GinkgoHelper()
			_, _ = c.Write([]byte("hello"))
			_ = c.(*net.TCPConn).CloseWrite()
			got, _ := io.ReadAll(c)
			return string(got)
		}
		Expect(echoed(dialTCP(allowPort))).To(Equal("hello"))
		d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
		c, err := d.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", allowPort))
		Expect(err).NotTo(HaveOccurred())
		Expect(echoed(c)).To(BeEmpty(), "a connection from 127.0.0.2 went through")
		Expect(echoed(dialTCP(denyPort))).To(BeEmpty(), "a connection to the closed port went through")

		expectStatValues(s, map[string]string{
			"tcp_allow.rbac.allowed":             "1",
			"tcp_allow.rbac.denied":              "1",
			"tcp_allow.rbac.dry_.shadow_denied":  "2",
			"tcp_allow.rbac.dry_.shadow_allowed": "0",
			"tcp_deny.rbac.denied":               "1",
			"tcp_deny.rbac.allowed":              "0",
		})
	})

	It("refuses inputs Envoy does not allow an RBAC filter, and what Outrigger does not implement, with their paths", func() {
		config := proxySpec{
			Port: freePort(),
			Filters: `[` + httpFilter("envoy.filters.http.rbac", httpRBACType, `{
				matcher: {matcher_tree: {input: `+matchInput("envoy.type.matcher.v3.HttpResponseHeaderMatchInput", ", header_name: a")+`, exact_match_map: {map: {b: `+rbacAction("b", "ALLOW")+`}}}},
				shadow_matcher: {matcher_tree: {input: `+matchInput(networkInputs+"TransportProtocolInput", "")+`, exact_match_map: {map: {tls: `+rbacAction("t", "ALLOW")+`}}}}}`) + `]`,
			Clusters: []proxyCluster{{Name: "up", Port: freePort()}},
		}.YAML()
		r, _ := validate("bootstrap.yaml", config)
		Expect(r.ExitCode).To(Equal(1), "stdout: %s", r.Stdout)
		// An input Envoy has but does not allow RBAC, and one Outrigger
		// does not implement.
		Expect(r.Stderr).To(ContainSubstring(`http_filters[0].typed_config.matcher.matcher_tree.input.typed_config: the RBAC HTTP filter cannot match on envoy.type.matcher.v3.HttpResponseHeaderMatchInput`))
		// The transport protocol is a listener's input (filter_chain_matcher):
		// the RBAC filter refuses it, on its own.
		config = proxySpec{
			Port: freePort(),
			Filters: `[` + httpFilter("envoy.filters.http.rbac", httpRBACType, `{
				shadow_matcher: {matcher_tree: {input: `+matchInput(networkInputs+"TransportProtocolInput", "")+`, exact_match_map: {map: {tls: `+rbacAction("t", "ALLOW")+`}}}}}`) + `]`,
			Clusters: []proxyCluster{{Name: "up", Port: freePort()}},
		}.YAML()
		r, _ = validate("bootstrap.yaml", config)
		Expect(r.ExitCode).To(Equal(1), "stdout: %s", r.Stdout)
		Expect(r.Stderr).To(ContainSubstring(`http_filters[0].typed_config.shadow_matcher.matcher_tree.input.typed_config: the RBAC HTTP filter cannot match on envoy.extensions.matching.common_inputs.network.v3.TransportProtocolInput`))
	})
})
