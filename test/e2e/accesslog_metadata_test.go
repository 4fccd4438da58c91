package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// metadataLogBootstrap is a listener on port routing /up to the cluster
// "up" (the upstream at upAddr, cluster and endpoint metadata set) and /down
// to the cluster "down" (its only endpoint unhealthy, so the proxy answers
// itself), with the given access_log list and local_reply_config.
func metadataLogBootstrap(port int, upAddr, accessLog, localReply string) string {
	GinkgoHelper()
	return proxySpec{
		Port:        port,
		HCM:         "{stat_prefix: md, access_log: [" + accessLog + "], local_reply_config: " + localReply + "}",
		VirtualHost: "{metadata: {filter_metadata: {vh.info: {team: shop}}}}",
		Listener:    "{metadata: {filter_metadata: {l.info: {zone: edge}}}}",
		Routes: `[{match: {prefix: /up}, route: {cluster: up}, metadata: {filter_metadata: {route.info: {owner: checkout}}},
				response_headers_to_add: [
					{header: {key: x-zone, value: "%UPSTREAM_METADATA(envoy.lb:zone)%"}},
					{header: {key: x-version, value: "%UPSTREAM_METADATA([\"envoy.lb\", \"version\"])%"}},
					{header: {key: x-owner, value: "owner=%CLUSTER_METADATA(team:owner)%"}},
					{header: {key: x-dynamic, value: "%DYNAMIC_METADATA(ns:key)%"}}]},
			{match: {prefix: /down}, route: {cluster: down}}]`,
		Clusters: []proxyCluster{
			{Name: "up", Port: portNum(upAddr),
				Extra:    "{metadata: {filter_metadata: {team: {owner: payments, tier: 2, flags: {canary: false, weight: 0.25}}}}}",
				Endpoint: "{metadata: {filter_metadata: {envoy.lb: {zone: zone-a, version: v7}}}}"},
			{Name: "down", Port: 1, Extra: "{metadata: {filter_metadata: {team: {owner: search}}}}", Endpoint: "{health_status: UNHEALTHY}"},
		},
	}.YAML()
}

// getWithHeaders requests path on the listener and returns the status and
// the response headers.
func getWithHeaders(port int, path string) (int, http.Header) {
	GinkgoHelper()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(listenerURL(port, path))
	Expect(err).NotTo(HaveOccurred())
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header
}

// jsonLine finds the stdout JSON line whose "path" is path.
func jsonLine(stdout, path string) map[string]any {
	for _, line := range strings.Split(stdout, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["path"] == path {
			return m
		}
	}
	return nil
}

var _ = Describe("Access-log metadata operators and formatter extensions", func() {
	It("renders listener, route, virtual host, cluster and endpoint metadata in text and JSON logs, header values and local reply bodies, and strips queries with req_without_query", func() {
		upstream := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, "ok")
		}), false)
		port := freePort()
		s := Start(newDir(), metadataLogBootstrap(port, upstream, `
			{name: text, typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog,
			  log_format: {text_format_source: {inline_string: "MD path=%REQ_WITHOUT_QUERY(:PATH)% zone=%UPSTREAM_METADATA(envoy.lb:zone)% owner=%CLUSTER_METADATA(team:owner)% tier=%METADATA(CLUSTER:team:tier)% flags=%CLUSTER_METADATA(team:flags)% short=%METADATA(UPSTREAM_HOST:envoy.lb):10% dyn=%DYNAMIC_METADATA(ns:key)% ns=%METADATA(DYNAMIC:ns)% route=%METADATA(ROUTE:route.info:owner)% vh=%METADATA(VIRTUAL_HOST:vh.info:team)% l=%METADATA(LISTENER:l.info:zone)%\n"},
			    formatters: [{name: envoy.formatter.req_without_query, typed_config: {"@type": type.googleapis.com/envoy.extensions.formatter.req_without_query.v3.ReqWithoutQuery}},
			                 {name: envoy.formatter.metadata, typed_config: {"@type": type.googleapis.com/envoy.extensions.formatter.metadata.v3.Metadata}}]}}},
			{name: json, typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog,
			  log_format: {json_format: {path: "%REQ_WITHOUT_QUERY(:PATH)%", team: "%CLUSTER_METADATA(team)%", tier: "%CLUSTER_METADATA(team:tier)%",
			    zone: "%UPSTREAM_METADATA(envoy.lb:zone)%", dyn: "%DYNAMIC_METADATA(ns:key)%", text: "z=%UPSTREAM_METADATA(envoy.lb:zone)%"},
			    formatters: [{name: envoy.formatter.req_without_query, typed_config: {"@type": type.googleapis.com/envoy.extensions.formatter.req_without_query.v3.ReqWithoutQuery}}]}}}`,
			`{body_format: {text_format_source: {inline_string: "local reply for %CLUSTER_METADATA(team:owner)% host=%UPSTREAM_METADATA(envoy.lb:zone)%"}}}`),
			"--file-flush-interval-msec", "50")

		code, h := getWithHeaders(port, "/up/pay?token=secret")
		Expect(code).To(Equal(200))
		Expect(h.Get("X-Zone")).To(Equal("zone-a"))
		Expect(h.Get("X-Version")).To(Equal("v7"), "the JSON argument form of header values is translated")
		Expect(h.Get("X-Owner")).To(Equal("owner=payments"))
		Expect(h.Values("X-Dynamic")).To(BeEmpty(), "no filter sets dynamic metadata: the header is left out")

		Eventually(s.Stdout).Should(ContainSubstring(
			`MD path=/up/pay zone=zone-a owner=payments tier=2 flags={"canary":false,"weight":0.25} short={"version" dyn=- ns=- route=checkout vh=shop l=edge` + "\n"))
		Expect(s.Stdout()).NotTo(ContainSubstring("secret"))
		var line map[string]any
		Eventually(func() map[string]any { line = jsonLine(s.Stdout(), "/up/pay"); return line }).ShouldNot(BeNil())
		Expect(line).To(Equal(map[string]any{
			"path": "/up/pay",
			"team": map[string]any{"owner": "payments", "tier": 2.0, "flags": map[string]any{"canary": false, "weight": 0.25}},
			"tier": 2.0, "zone": "zone-a", "dyn": nil, "text": "z=zone-a",
		}))

		// A local reply after the cluster was chosen but no host was: the
		// cluster's metadata is known, the host's is not.
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(listenerURL(port, "/down?q=1"))
		Expect(err).NotTo(HaveOccurred())
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(503))
		Expect(string(body)).To(Equal("local reply for search host=-"))
		Eventually(s.Stdout).Should(ContainSubstring("MD path=/down zone=- owner=search tier=- flags=- short=- dyn=- ns=- route=- vh=shop l=edge\n"))
	})

	DescribeTable("refuses formats Envoy refuses, and formatter extensions it does not implement",
		func(logFormat, want string) {
			r, _ := validate("bootstrap.yaml", accessLogBootstrap(freePort(), `
				{name: out, typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog,
				  log_format: `+logFormat+`}}`, ""))
			Expect(r.ExitCode).To(Equal(1), "stdout: %s", r.Stdout)
			Expect(r.Stderr).To(ContainSubstring(want))
		},
		Entry("REQ_WITHOUT_QUERY without its formatter",
			`{text_format_source: {inline_string: "%REQ_WITHOUT_QUERY(:PATH)%"}}`,
			"log_format.text_format_source.inline_string: at offset 0: command operator %REQ_WITHOUT_QUERY% needs the formatter extension envoy.formatter.req_without_query"),
		Entry("a length on DYNAMIC_METADATA",
			`{text_format_source: {inline_string: "%DYNAMIC_METADATA(ns:key):5%"}}`,
			"DYNAMIC_METADATA does not allow length to be specified."),
		Entry("an unknown metadata type",
			`{text_format_source: {inline_string: "%METADATA(SOMETHING:ns)%"}}`,
			"SOMETHING is not supported type of metadata"),
		Entry("a CEL expression that does not parse",
			`{text_format_source: {inline_string: "%CEL(request.headers[)%"}, formatters: [{name: envoy.formatter.cel, typed_config: {"@type": type.googleapis.com/envoy.extensions.formatter.cel.v3.Cel}}]}`,
			"log_format.text_format_source.inline_string: at offset 0: %CEL%: Not able to parse filter expression"),
	)
})

var _ = Describe("Metadata operators in tcp_proxy access logs", func() {
	It("logs the chosen cluster's and endpoint's metadata", func() {
		up := startTCPServer(echo)
		port := freePort()
		cluster := fmt.Sprintf(`{name: db, connect_timeout: 1s, metadata: {filter_metadata: {team: {owner: storage}}},
			load_assignment: {cluster_name: db, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}},
			metadata: {filter_metadata: {envoy.lb: {zone: zone-b}}}}]}]}}`, up)
		cfg := strings.Replace(tcpBootstrap(port, "cluster: db", cluster),
			"TCPLOG %UPSTREAM_CLUSTER%", "TCPLOG owner=%CLUSTER_METADATA(team:owner)% zone=%METADATA(UPSTREAM_HOST:envoy.lb:zone)% %UPSTREAM_CLUSTER%", 1)
		Expect(cfg).To(ContainSubstring("owner=%CLUSTER_METADATA"))
		s := Start(newDir(), cfg, "--file-flush-interval-msec", "50")
		pingEcho(port)
		Eventually(s.Stdout).Should(ContainSubstring("TCPLOG owner=storage zone=zone-b db "))
	})
})
