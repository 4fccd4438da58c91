package e2e

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("HTTP connection manager proxy_status_config", func() {
	// start runs a proxy with proxy_status_config psc (a YAML flow
	// mapping): /ok is answered directly, /up goes to a cluster whose
	// port refuses connections, anything else has no route.
	start := func(psc string) int {
		up := startCountingUpstream()
		port := freePort()
		Start(newDir(), proxySpec{
			Port: port,
			Top:  "{node: {id: sidecar-7, cluster: mesh}}",
			HCM:  "{stat_prefix: ingress, proxy_status_config: " + psc + "}",
			Routes: `[{match: {path: /ok}, route: {cluster: up}},
				{match: {prefix: /up}, route: {cluster: refused}}]`,
			Clusters: []proxyCluster{{Name: "up", Port: portNum(up.addr)}, {Name: "refused", Port: closedPort()}},
		}.YAML())
		return port
	}

	It("adds Proxy-Status to a local reply with the error its response flags name, the details and the flags", func() {
		port := start("{}")
		out := curl("-i", listenerURL(port, "/nowhere"))
		Expect(out).To(HavePrefix("HTTP/1.1 404"))
		Expect(out).To(ContainSubstring("proxy-status: outrigger; error=destination_not_found; details=\"route_not_found; NR\"\r\n"))
		out = curl("-i", listenerURL(port, "/ok"))
		Expect(out).To(HavePrefix("HTTP/1.1 200"))
		Expect(out).NotTo(ContainSubstring("proxy-status"), "a response without an error has none")
	})

	It("names an upstream that refuses the connection, sets the recommended status, and takes the node id as the proxy name", func() {
		port := start("{use_node_id: true, set_recommended_response_code: true, remove_response_flags: true}")
		out := curl("-i", listenerURL(port, "/up"))
		Expect(out).To(HavePrefix("HTTP/1.1 502"), "connection_refused recommends 502 over the 503 of the reply")
		Expect(out).To(ContainSubstring("proxy-status: sidecar-7; error=connection_refused; details=\"upstream_reset_before_response_started{connection_failure}\"\r\n"))
	})

	It("leaves the details out with remove_details, and takes a literal proxy name", func() {
		port := start("{literal_proxy_name: edge-1, remove_details: true}")
		out := curl("-i", "--http2-prior-knowledge", listenerURL(port, "/nowhere"))
		Expect(out).To(HavePrefix("HTTP/2 404"))
		Expect(out).To(ContainSubstring("proxy-status: edge-1; error=destination_not_found\r\n"))
	})

	It("loads in validate mode", func() {
		r, _ := validate("bootstrap.yaml", proxySpec{Port: freePort(), HCM: "{stat_prefix: ingress, proxy_status_config: {remove_details: true}}",
			Clusters: []proxyCluster{{Name: "up", Port: 1}}}.YAML())
		Expect(r.ExitCode).To(Equal(0), fmt.Sprint(r.Stderr))
	})
})
