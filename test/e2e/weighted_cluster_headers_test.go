package e2e

import (
	"encoding/json"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("A weighted cluster's own header edits and host rewrite", func() {
	It("applies the chosen cluster's, before the route's, on requests and responses", func() {
		up := headerEchoUpstream()
		port := freePort()
		// Cluster b has no weight: every request goes to a, whose edits
		// show; b's never do.
		weighted := `{clusters: [
			{name: a, weight: 1, host_rewrite_literal: a.internal,
			 request_headers_to_add: [{header: {key: x-picked, value: a}}, {header: {key: x-order, value: cluster}}],
			 request_headers_to_remove: [x-drop],
			 response_headers_to_add: [{header: {key: x-via, value: "%UPSTREAM_CLUSTER%"}}]},
			{name: b, weight: 0, request_headers_to_add: [{header: {key: x-picked, value: b}}]}]}`
		Start(newDir(), proxySpec{
			Port: port,
			Routes: `[{match: {prefix: /}, route: {weighted_clusters: ` + weighted + `},
				request_headers_to_add: [{header: {key: x-order, value: route}, append_action: OVERWRITE_IF_EXISTS_OR_ADD}]}]`,
			Clusters: []proxyCluster{{Name: "a", Port: up}, {Name: "b", Port: up}},
		}.YAML())

		r := httpDo(rawClients()["HTTP/1.1"], http.MethodGet, listenerURL(port, "/"), nil, http.Header{"X-Drop": {"me"}})
		Expect(r.Status).To(Equal(http.StatusOK))
		var got map[string]string
		Expect(json.Unmarshal([]byte(r.Body), &got)).To(Succeed())
		Expect(got["X-Picked"]).To(Equal("a"))
		Expect(got).NotTo(HaveKey("X-Drop"))
		// The route's edit comes after the cluster's and overrides it.
		Expect(got["X-Order"]).To(Equal("route"))
		Expect(got["host"]).To(Equal("a.internal"))
		Expect(got).NotTo(HaveKey("X-Envoy-Original-Host"))
		Expect(r.Header.Get("x-via")).To(Equal("a"))
	})
})
