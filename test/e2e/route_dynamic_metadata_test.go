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
