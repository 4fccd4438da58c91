package e2e

import (
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// upstreamLuaScript runs in the router's upstream chain: it edits each
// attempt's request (naming the attempt, from the attempt count the
// router set before the upstream filters), answers /deny itself, fails
// on /error, and on the response reads the body of the attempt relayed.
const upstreamLuaScript = `
function envoy_on_request(h)
  local hs = h:headers()
  local path = hs:get(":path")
  if path == "/deny" then
    h:respond({[":status"] = "403", ["x-denied-by"] = "upstream lua"}, "denied upstream")
  elseif path == "/error" then
    local t = nil
    return t.field
  end
  hs:replace("x-lua-attempt", "attempt-" .. hs:get("x-envoy-attempt-count"))
  -- The path as the previous attempt's script left it: Envoy's upstream
  -- filters edit the router's request in place.
  local base = string.gsub(path, "%?.*", "")
  hs:replace(":path", base .. "?lua=" .. hs:get("x-envoy-attempt-count"))
end

function envoy_on_response(h)
  local hs = h:headers()
  hs:add("x-lua-resp", hs:get(":status"))
  local b = h:body()
  hs:add("x-lua-body-len", b:length())
  b:setBytes(string.upper(b:getBytes(0, b:length())))
end
`

var _ = Describe("The Lua filter upstream", func() {
	plain := &http.Client{Timeout: 10 * time.Second}

	It("edits each attempt's request with a script of the attempt's own, and the response of the attempt relayed", func() {
		rec := &attemptRecorder{failFirst: 1}
		port := freePort()
		sc := Start(newDir(), proxySpec{
			Port:        port,
			HCM:         "{stat_prefix: web}",
			VirtualHost: `{include_request_attempt_count: true}`,
			Routes:      `[{match: {prefix: /}, route: {cluster: up, retry_policy: {retry_on: 5xx, num_retries: 2, retry_back_off: {base_interval: 0.001s}}}}]`,
			Router: `{upstream_http_filters: [` + httpFilter("envoy.filters.http.lua", luaType,
				`{stat_prefix: upl, default_source_code: {inline_string: `+quoteJSON(upstreamLuaScript)+`}}`) + `, ` + upstreamCodec + `]}`,
			Clusters: []proxyCluster{{Name: "up", Port: portNum(httpTestUpstream(rec, false))}},
		}.YAML())

		r := httpDo(plain, "GET", listenerURL(port, "/a"), nil, nil)
		Expect(r.Status).To(Equal(200), r.Body)
		Expect(r.Body).To(Equal("OK"))
		Expect(r.Header.Get("x-lua-resp")).To(Equal("200"))
		Expect(r.Header.Get("x-lua-body-len")).To(Equal("2"))
		seen := rec.attempts()
		Expect(seen).To(HaveLen(2))
		for i, h := range seen {
			n := string(rune('1' + i))
			Expect(h.Get("X-Lua-Attempt")).To(Equal("attempt-"+n), "attempt %d", i+1)
			// Each attempt's script edits the request again.
			Expect(h.Get("X-Recorded-Path")).To(Equal("/a?lua="+n), "attempt %d", i+1)
		}

		// respond() answers from the upstream chain, with its headers;
		// the upstream sees nothing and nothing is retried.
		r = httpDo(plain, "GET", listenerURL(port, "/deny"), nil, nil)
		Expect(r.Status).To(Equal(403))
		Expect(r.Body).To(Equal("denied upstream"))
		Expect(r.Header.Get("x-denied-by")).To(Equal("upstream lua"))
		Expect(rec.attempts()).To(HaveLen(2))

		// A failing script answers 500, counted under the server's
		// scope as Envoy keeps the router's upstream filters' stats.
		r = httpDo(plain, "GET", listenerURL(port, "/error"), nil, nil)
		Expect(r.Status).To(Equal(500))
		Expect(rec.attempts()).To(HaveLen(2))
		Expect(statValue(sc, "lua.upl.errors")).To(Equal("1"))
		Expect(statValue(sc, "cluster.up.upstream_rq_retry")).To(Equal("1"))
	})

	It("is refused in a cluster's http_filters, with the path", func() {
		lua := httpFilter("envoy.filters.http.lua", luaType, `{default_source_code: {inline_string: "function envoy_on_request(h) end"}}`)
		r, _ := validate("b.yaml", proxySpec{
			Port: freePort(), HCM: "{stat_prefix: web}",
			Clusters: []proxyCluster{{Name: "up", Port: freePort(), Extra: httpProtocolOptions(`{explicit_http_config: {http_protocol_options: {}}, http_filters: [` + lua + `, ` + upstreamCodec + `]}`)}},
		}.YAML())
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring(`http_filters[0].typed_config: filter "envoy.filters.http.lua" is not supported by Outrigger in a cluster's http_filters (only in the router's upstream_http_filters)`))
	})
})
