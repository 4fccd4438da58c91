package e2e

import (
	"encoding/json"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Routes matched on the stream's dynamic metadata", func() {
	It("choose the route whose dynamic_metadata matchers all accept what a filter recorded, once the route is matched again", func() {
		up := headerEchoUpstream()
		port := freePort()
		// The Lua filter records the tier from a header and edits a
		// header, which clears the route cache (clear_route_cache is
		// true by default): the router then matches with the metadata.
		lua := httpFilter("envoy.filters.http.lua", "type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua", `{default_source_code: {inline_string: "
function envoy_on_request(h)
  local tier = h:headers():get('x-tier')
  if tier ~= nil then
    h:streamInfo():dynamicMetadata():set('acme.tiering', 'tier', tier)
    h:headers():add('x-tiered', 'yes')
  end
end
"}}`)
		Start(newDir(), proxySpec{
			Port:    port,
			Filters: "[" + lua + "]",
			Routes: `[
				{match: {prefix: /, dynamic_metadata: [{filter: acme.tiering, path: [{key: tier}], value: {string_match: {exact: gold}}}]},
				 route: {cluster: gold}, request_headers_to_add: [{header: {key: x-route, value: gold}}]},
				{match: {prefix: /, dynamic_metadata: [{filter: acme.tiering, path: [{key: tier}], value: {string_match: {prefix: s}}, invert: true}]},
				 route: {cluster: other}, request_headers_to_add: [{header: {key: x-route, value: not-s}}]},
				{match: {prefix: /}, route: {cluster: other}, request_headers_to_add: [{header: {key: x-route, value: default}}]}]`,
			Clusters: []proxyCluster{{Name: "gold", Port: up}, {Name: "other", Port: up}},
		}.YAML())
		routeOf := func(tier string) string {
			h := http.Header{}
			if tier != "" {
				h.Set("x-tier", tier)
			}
			r := httpDo(rawClients()["HTTP/1.1"], http.MethodGet, listenerURL(port, "/"), nil, h)
			Expect(r.Status).To(Equal(http.StatusOK))
			var got map[string]string
			Expect(json.Unmarshal([]byte(r.Body), &got)).To(Succeed())
			return got["X-Route"]
		}
		Expect(routeOf("gold")).To(Equal("gold"))
		Expect(routeOf("silver")).To(Equal("default"))
		// No metadata at all: the inverted matcher accepts it.
		Expect(routeOf("")).To(Equal("not-s"))
		Expect(routeOf("bronze")).To(Equal("not-s"))
	})
})

var _ = Describe("Routes matched on cookies", func() {
	It("parse the Cookie header and match the named cookie's value, invert_match taking an absent cookie", func() {
		up := headerEchoUpstream()
		port := freePort()
		Start(newDir(), proxySpec{
			Port: port,
			Routes: `[
				{match: {prefix: /, cookies: [{name: variant, string_match: {exact: beta}}, {name: session, string_match: {safe_regex: {regex: ".*"}}}]},
				 route: {cluster: beta}, request_headers_to_add: [{header: {key: x-route, value: beta}}]},
				{match: {prefix: /, cookies: [{name: session, string_match: {safe_regex: {regex: ".*"}}, invert_match: true}]},
				 route: {cluster: stable}, request_headers_to_add: [{header: {key: x-route, value: anonymous}}]},
				{match: {prefix: /}, route: {cluster: stable}, request_headers_to_add: [{header: {key: x-route, value: stable}}]}]`,
			Clusters: []proxyCluster{{Name: "beta", Port: up}, {Name: "stable", Port: up}},
		}.YAML())
		routeOf := func(cookie string) string {
			h := http.Header{}
			if cookie != "" {
				h.Set("Cookie", cookie)
			}
			r := httpDo(rawClients()["HTTP/1.1"], http.MethodGet, listenerURL(port, "/"), nil, h)
			Expect(r.Status).To(Equal(http.StatusOK))
			var got map[string]string
			Expect(json.Unmarshal([]byte(r.Body), &got)).To(Succeed())
			return got["X-Route"]
		}
		Expect(routeOf(`session=abc; variant="beta"`)).To(Equal("beta"))
		Expect(routeOf("session=abc; variant=gamma")).To(Equal("stable"))
		Expect(routeOf("variant=beta")).To(Equal("anonymous"))
		Expect(routeOf("")).To(Equal("anonymous"))
	})
})

var _ = Describe("Routes matched on filter state", func() {
	It("load with string and address matchers, and refuse a bad range with its path", func() {
		spec := func(matcher string) string {
			return proxySpec{
				Port:     freePort(),
				Routes:   `[{match: {prefix: /, filter_state: [{key: acme.tenant, ` + matcher + `}]}, route: {cluster: up}}]`,
				Clusters: []proxyCluster{{Name: "up", Port: 1}},
			}.YAML()
		}
		r, _ := validate("fs.yaml", spec("string_match: {exact: gold}"))
		Expect(r.ExitCode).To(Equal(0), r.Stderr)
		r, _ = validate("fs-address.yaml", spec("address_match: {ranges: [{address_prefix: 10.0.0.0, prefix_len: 8}]}"))
		Expect(r.ExitCode).To(Equal(0), r.Stderr)
		r, _ = validate("fs-bad.yaml", spec("address_match: {ranges: [{address_prefix: 10.0.0.300, prefix_len: 8}]}"))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("match.filter_state[0].address_match.ranges[0].address_prefix: "))
	})
})
