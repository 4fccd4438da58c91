package e2e

import (
	"encoding/json"
	"fmt"
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

var _ = Describe("Picking a weighted cluster by header_name or use_hash_policy", func() {
	// picked sends a GET with the header and says which cluster's edit
	// the upstream saw.
	picked := func(port int, h http.Header) string {
		r := httpDo(rawClients()["HTTP/1.1"], http.MethodGet, listenerURL(port, "/"), nil, h)
		Expect(r.Status).To(Equal(http.StatusOK))
		var got map[string]string
		Expect(json.Unmarshal([]byte(r.Body), &got)).To(Succeed())
		return got["X-Picked"]
	}
	start := func(specifier, extra string) int {
		up := headerEchoUpstream()
		port := freePort()
		Start(newDir(), proxySpec{
			Port: port,
			Routes: `[{match: {prefix: /}, route: {` + extra + `weighted_clusters: {` + specifier + `, clusters: [
				{name: a, weight: 1, request_headers_to_add: [{header: {key: x-picked, value: a}}]},
				{name: b, weight: 1, request_headers_to_add: [{header: {key: x-picked, value: b}}]}]}}}]`,
			Clusters: []proxyCluster{{Name: "a", Port: up}, {Name: "b", Port: up}},
		}.YAML())
		return port
	}

	It("takes the header's number modulo the total weight, as a proxy before it did", func() {
		port := start("header_name: x-pick", "")
		for range 5 {
			Expect(picked(port, http.Header{"X-Pick": {"0"}})).To(Equal("a"))
			Expect(picked(port, http.Header{"X-Pick": {"1"}})).To(Equal("b"))
			Expect(picked(port, http.Header{"X-Pick": {"18446744073709551615"}})).To(Equal("b"))
		}
		// Not a number: a random pick, still one of the two.
		Expect(picked(port, http.Header{"X-Pick": {"soon"}})).To(BeElementOf("a", "b"))
	})

	It("keeps a user on one cluster with use_hash_policy", func() {
		port := start("use_hash_policy: true", "hash_policy: [{header: {header_name: x-user}}], ")
		seen := map[string]bool{}
		for u := range 20 {
			h := http.Header{"X-User": {fmt.Sprint("user-", u)}}
			first := picked(port, h)
			for range 3 {
				Expect(picked(port, h)).To(Equal(first), "user %d moved", u)
			}
			seen[first] = true
		}
		// Twenty users all hashing to one of two clusters has odds of
		// one in half a million.
		Expect(seen).To(HaveLen(2))
	})
})

var _ = Describe("A weighted cluster given by cluster_header", func() {
	It("routes to the cluster the request's header names, 503 without it", func() {
		up := headerEchoUpstream()
		port := freePort()
		Start(newDir(), proxySpec{
			Port: port,
			Routes: `[{match: {prefix: /}, route: {weighted_clusters: {clusters: [
				{cluster_header: x-target, weight: 1, request_headers_to_add: [{header: {key: x-picked, value: by-header}}]},
				{name: a, weight: 0}]}}}]`,
			Clusters: []proxyCluster{{Name: "a", Port: 1}, {Name: "b", Port: up}},
		}.YAML())
		r := httpDo(rawClients()["HTTP/1.1"], http.MethodGet, listenerURL(port, "/"), nil, http.Header{"X-Target": {"b"}})
		Expect(r.Status).To(Equal(http.StatusOK))
		Expect(r.Body).To(ContainSubstring(`"X-Picked":"by-header"`))
		r = httpDo(rawClients()["HTTP/1.1"], http.MethodGet, listenerURL(port, "/"), nil, nil)
		Expect(r.Status).To(Equal(http.StatusServiceUnavailable))
	})
})

var _ = Describe("Weighted clusters with runtime_key_prefix", func() {
	It("take each cluster's weight from the runtime when it sets one, at every request", func() {
		up := headerEchoUpstream()
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port: port,
			Top:  `{layered_runtime: {layers: [{name: admin, admin_layer: {}}]}}`,
			Routes: `[{match: {prefix: /}, route: {weighted_clusters: {runtime_key_prefix: routing.split, clusters: [
				{name: a, weight: 1, request_headers_to_add: [{header: {key: x-picked, value: a}}]},
				{name: b, weight: 0, request_headers_to_add: [{header: {key: x-picked, value: b}}]}]}}}]`,
			Clusters: []proxyCluster{{Name: "a", Port: up}, {Name: "b", Port: up}},
		}.YAML())
		pick := func() string {
			r := httpDo(rawClients()["HTTP/1.1"], http.MethodGet, listenerURL(port, "/"), nil, nil)
			Expect(r.Status).To(Equal(http.StatusOK))
			var got map[string]string
			Expect(json.Unmarshal([]byte(r.Body), &got)).To(Succeed())
			return got["X-Picked"]
		}
		for range 5 {
			Expect(pick()).To(Equal("a"))
		}
		Expect(s.Post("/runtime_modify?routing.split.a=0&routing.split.b=5").Status).To(Equal(200))
		for range 5 {
			Expect(pick()).To(Equal("b"))
		}
	})
})
