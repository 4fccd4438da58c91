package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

const (
	luaType         = "type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua"
	luaPerRouteType = "type.googleapis.com/envoy.extensions.filters.http.lua.v3.LuaPerRoute"
)

// luaScript is the default script of the specs, written the way users
// write them: it rewrites headers both ways, answers /deny itself, calls
// the auth cluster on /call, rewrites the body on /body, and fails on
// /error and /loop.
const luaScript = `
function envoy_on_request(h)
  local hs = h:headers()
  local path = hs:get(":path")
  if path == "/deny" then
    h:respond({[":status"] = "403", ["x-denied-by"] = "lua"}, "denied by lua")
  elseif path == "/error" then
    local t = nil
    return t.field
  elseif path == "/loop" then
    while true do end
  elseif path == "/call" then
    local rh, rb = h:httpCall("auth", {[":method"] = "POST", [":path"] = "/who", [":authority"] = "auth.local"}, "token-1", 5000)
    hs:add("x-auth-status", rh[":status"])
    hs:add("x-auth-user", rh["x-user"])
    hs:add("x-auth-body", rb)
  elseif path == "/body" then
    local b = h:body()
    hs:add("x-body-len", b:length())
    b:setBytes(string.upper(b:getBytes(0, b:length())) .. "!")
  end
  hs:remove("x-secret")
  hs:add("x-lua-req", "default")
  h:logInfo("lua saw " .. path)
end

function envoy_on_response(h)
  local hs = h:headers()
  hs:add("x-lua-resp", hs:get(":status"))
  hs:remove("x-upstream-secret")
  if hs:get("x-path") == "/page" then
    local b = h:body()
    hs:add("x-upstream-length", b:length())
    b:setBytes("<html>" .. b:getBytes(0, 6) .. "</html>")
    hs:replace("content-type", "text/html")
  elseif hs:get("x-path") == "/chunks" then
    hs:add("x-streamed", "yes")
    for chunk in h:bodyChunks() do
      chunk:setBytes(string.upper(chunk:getBytes(0, chunk:length())))
    end
  end
end
`

// luaUpstream answers with the request's headers (first value of each)
// and body as JSON, a secret header, and counts the requests it sees.
func luaUpstream(hits *atomic.Int64) string {
	GinkgoHelper()
	return httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		seen := map[string]string{}
		for k, v := range r.Header {
			seen[strings.ToLower(k)] = v[0]
		}
		b, _ := io.ReadAll(r.Body)
		seen["body"] = string(b)
		w.Header().Set("x-upstream-secret", "s")
		w.Header().Set("x-path", r.URL.Path)
		w.Header().Set("content-type", "application/json")
		_ = json.NewEncoder(w).Encode(seen)
	}), false)
}

// luaSpec is a listener on port with the Lua filter (luaScript, a named
// script and stat_prefix "my") before the router; /off disables it,
// /named selects the named script and /own brings its own.
func luaSpec(port int, up, auth string) string {
	GinkgoHelper()
	perRoute := func(fields string) string {
		return `{envoy.filters.http.lua: ` + withType(luaPerRouteType, fields) + `}`
	}
	filter := withType(luaType, `{stat_prefix: my}`)
	var cfg map[string]any
	Expect(json.Unmarshal([]byte(filter), &cfg)).To(Succeed())
	cfg["inline_code"] = luaScript
	cfg["source_codes"] = map[string]any{"named": map[string]any{
		"inline_string": `function envoy_on_request(h) h:headers():add("x-lua-req", "named") end`,
	}}
	typed, err := json.Marshal(cfg)
	Expect(err).NotTo(HaveOccurred())
	return proxySpec{
		Port: port,
		HCM:  "{stat_prefix: web}",
		Routes: `[{match: {prefix: /off}, route: {cluster: up}, typed_per_filter_config: ` + perRoute(`{disabled: true}`) + `},
			{match: {prefix: /named}, route: {cluster: up}, typed_per_filter_config: ` + perRoute(`{name: named}`) + `},
			{match: {prefix: /own}, route: {cluster: up}, typed_per_filter_config: ` + perRoute(`{source_code: {inline_string: "function envoy_on_request(h) h:headers():add('x-lua-req', 'route') end"}}`) + `},
			{match: {prefix: /}, route: {cluster: up}}]`,
		Filters:  `[{name: envoy.filters.http.lua, typed_config: ` + string(typed) + `}]`,
		Clusters: []proxyCluster{{Name: "up", Port: portNum(up)}, {Name: "auth", Port: portNum(auth)}},
	}.YAML()
}

// luaSeen decodes the luaUpstream answer.
func luaSeen(r Response) map[string]string {
	GinkgoHelper()
	var seen map[string]string
	Expect(json.Unmarshal([]byte(r.Body), &seen)).To(Succeed(), r.Body)
	return seen
}

var _ = Describe("The Lua filter", Ordered, func() {
	plain := &http.Client{Timeout: 10 * time.Second}
	var (
		sc        *Sidecar
		port      int
		hits      atomic.Int64
		authCalls atomic.Int64
	)

	BeforeAll(func() {
		up := luaUpstream(&hits)
		auth := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			authCalls.Add(1)
			b, _ := io.ReadAll(r.Body)
			w.Header().Set("x-user", "alice:"+r.Host+":"+string(b))
			_, _ = io.WriteString(w, "auth says hi")
		}), false)
		port = freePort()
		sc = Start(newDir(), luaSpec(port, up, auth))
	})

	It("rewrites request and response headers", func() {
		r := httpDo(plain, "GET", listenerURL(port, "/a"), nil, http.Header{"X-Secret": {"s"}})
		Expect(r.Status).To(Equal(200))
		seen := luaSeen(r)
		Expect(seen).To(HaveKeyWithValue("x-lua-req", "default"))
		Expect(seen).NotTo(HaveKey("x-secret"))
		Expect(r.Header.Get("X-Lua-Resp")).To(Equal("200"))
		Expect(r.Header).NotTo(HaveKey("X-Upstream-Secret"))
		Eventually(sc.Stderr).Should(ContainSubstring("script log: lua saw /a"))
	})

	It("answers a request itself with respond()", func() {
		before := hits.Load()
		r := httpDo(plain, "GET", listenerURL(port, "/deny"), nil, nil)
		Expect(r.Status).To(Equal(403))
		Expect(r.Body).To(Equal("denied by lua"))
		Expect(r.Header.Get("X-Denied-By")).To(Equal("lua"))
		// Envoy sends the script's headers only: no content-type.
		Expect(r.Header).NotTo(HaveKey("Content-Type"))
		// The response script runs on the reply too, as in Envoy.
		Expect(r.Header.Get("X-Lua-Resp")).To(Equal("403"))
		Expect(hits.Load()).To(Equal(before), "the upstream saw the denied request")
	})

	It("calls another cluster with httpCall and uses its answer", func() {
		r := httpDo(plain, "GET", listenerURL(port, "/call"), nil, nil)
		Expect(r.Status).To(Equal(200))
		seen := luaSeen(r)
		Expect(seen).To(HaveKeyWithValue("x-auth-status", "200"))
		Expect(seen).To(HaveKeyWithValue("x-auth-user", "alice:auth.local:token-1"))
		Expect(seen).To(HaveKeyWithValue("x-auth-body", "auth says hi"))
		Expect(authCalls.Load()).To(BeNumerically(">=", 1))
	})

	It("reads and rewrites the request body", func() {
		r := httpDo(plain, "POST", listenerURL(port, "/body"), strings.NewReader("hello lua"), nil)
		Expect(r.Status).To(Equal(200))
		seen := luaSeen(r)
		Expect(seen).To(HaveKeyWithValue("x-body-len", "9"))
		Expect(seen).To(HaveKeyWithValue("body", "HELLO LUA!"))
	})

	It("reads and rewrites the response body, then its headers", func() {
		r := httpDo(plain, "GET", listenerURL(port, "/page"), nil, nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal(`<html>{"acce</html>`))
		Expect(r.Header.Get("Content-Type")).To(Equal("text/html"))
		Expect(r.Header.Get("X-Upstream-Length")).NotTo(BeEmpty())
		Expect(r.Header.Get("X-Lua-Resp")).To(Equal("200"))
	})

	It("rewrites the response body piece by piece with bodyChunks()", func() {
		r := httpDo(plain, "GET", listenerURL(port, "/chunks"), nil, nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Header.Get("X-Streamed")).To(Equal("yes"))
		Expect(r.Body).To(HavePrefix(`{"ACCEPT-ENCODING":"GZIP"`))
		Expect(r.Body).To(Equal(strings.ToUpper(r.Body)))
	})

	It("follows LuaPerRoute: disabled, a named script, a script of the route", func() {
		seen := luaSeen(httpDo(plain, "GET", listenerURL(port, "/off"), nil, http.Header{"X-Secret": {"s"}}))
		Expect(seen).NotTo(HaveKey("x-lua-req"))
		Expect(seen).To(HaveKey("x-secret"))
		Expect(luaSeen(httpDo(plain, "GET", listenerURL(port, "/named"), nil, nil))).To(HaveKeyWithValue("x-lua-req", "named"))
		Expect(luaSeen(httpDo(plain, "GET", listenerURL(port, "/own"), nil, nil))).To(HaveKeyWithValue("x-lua-req", "route"))
	})

	It("answers 500 to a script that fails, logs it and counts it in lua.errors", func() {
		before, err := strconv.Atoi(statValue(sc, "http.web.lua.my.errors"))
		Expect(err).NotTo(HaveOccurred())
		r := httpDo(plain, "GET", listenerURL(port, "/error"), nil, nil)
		Expect(r.Status).To(Equal(500))
		Eventually(sc.Stderr).Should(ContainSubstring("script log: inline_code:"))
		Expect(statValue(sc, "http.web.lua.my.errors")).To(Equal(strconv.Itoa(before + 1)))
	})

	It("stops a script that loops, answers 500, and goes on serving", func() {
		r := httpDo(plain, "GET", listenerURL(port, "/loop"), nil, nil)
		Expect(r.Status).To(Equal(500))
		Eventually(sc.Stderr).Should(ContainSubstring("ran past its time budget"))
		for range 3 {
			Expect(httpDo(plain, "GET", listenerURL(port, "/a"), nil, nil).Status).To(Equal(200))
		}
	})
})

var _ = Describe("The Lua filter's configuration", func() {
	It("loads modules with require from package_paths, as Envoy's Lua sandbox does", func() {
		dir := GinkgoT().TempDir()
		Expect(os.MkdirAll(filepath.Join(dir, "lib"), 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, "lib", "mylibrary.lua"),
			[]byte("local M = {}\nfunction M.foobar() return 'bar' end\nreturn M\n"), 0o644)).To(Succeed())
		var seenHits atomic.Int64
		up := luaUpstream(&seenHits)
		fields, err := json.Marshal(map[string]any{
			"package_paths": []string{filepath.Join(dir, "?.lua")},
			"default_source_code": map[string]any{"inline_string": `local mylibrary = require("lib.mylibrary")
function envoy_on_request(request_handle)
  request_handle:headers():add("foo", mylibrary.foobar())
end`},
		})
		Expect(err).NotTo(HaveOccurred())
		p := freePort()
		Start(newDir(), proxySpec{
			Port:     p,
			HCM:      "{stat_prefix: web}",
			Filters:  "[" + httpFilter("envoy.filters.http.lua", luaType, string(fields)) + "]",
			Clusters: []proxyCluster{{Name: "up", Port: portNum(up)}},
		}.YAML())
		r := httpDo(&http.Client{Timeout: 10 * time.Second}, "GET", listenerURL(p, "/"), nil, nil)
		Expect(r.Status).To(Equal(200))
		Expect(luaSeen(r)).To(HaveKeyWithValue("foo", "bar"))
	})

	It("refuses a script that does not compile, and fields it does not implement, with their paths", func() {
		for fields, path := range map[string]string{
			`{inline_code: "function envoy_on_request(h) h:headers( end"}`:        "inline_code: script does not compile",
			`{source_codes: {a: {inline_string: "x = = 1"}}}`:                     `source_codes["a"].inline_string: script does not compile`,
			`{inline_code: "x = 1", package_cpaths: ["/tmp/?.so"]}`:               "package_cpaths",
			`{inline_code: "local m = require('not.there')"}`:                     "inline_code: script load error: inline_code:1: module not.there not found",
			`{default_source_code: {environment_variable: LUA_SCRIPT_NOT_THERE}}`: "environment_variable",
		} {
			spec := proxySpec{
				Port:     freePort(),
				HCM:      "{stat_prefix: web}",
				Filters:  "[" + httpFilter("envoy.filters.http.lua", luaType, fields) + "]",
				Clusters: []proxyCluster{{Name: "up", Port: freePort()}},
			}.YAML()
			r, _ := validate("lua.yaml", spec)
			Expect(r.ExitCode).To(Equal(1), fields)
			Expect(r.Stderr).To(ContainSubstring(path), fields)
		}
	})
})
