package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// luaStringMatcher is a StringMatcher (JSON, which YAML reads) whose
// custom pattern is the Lua matcher with code.
func luaStringMatcher(code string) string {
	GinkgoHelper()
	b, err := json.Marshal(map[string]any{"custom": map[string]any{
		"name": "envoy.string_matcher.lua",
		"typed_config": map[string]any{
			"@type":       "type.googleapis.com/envoy.extensions.string_matcher.lua.v3.Lua",
			"source_code": map[string]any{"inline_string": code},
		},
	}})
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

// matcherChain is a filter chain whose routes answer directly, the first
// two chosen by Lua string matchers on the path and on x-user.
func matcherChain(path, user string) string {
	return fmt.Sprintf(`{filters: [{name: envoy.filters.network.http_connection_manager, typed_config: {`+
		`"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager, `+
		`stat_prefix: lua_matcher, route_config: {virtual_hosts: [{name: all, domains: ["*"], routes: [`+
		`{match: {prefix: "/", headers: [{name: ":path", string_match: %s}]}, direct_response: {status: 200, body: {inline_string: versioned}}}, `+
		`{match: {prefix: "/", headers: [{name: x-user, string_match: %s}]}, direct_response: {status: 200, body: {inline_string: admin}}}, `+
		`{match: {prefix: "/"}, direct_response: {status: 200, body: {inline_string: rest}}}]}]}, `+
		`http_filters: [{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]}}]}`,
		path, user)
}

var _ = Describe("The Lua string matcher (envoy.string_matcher.lua)", func() {
	It("routes on request paths and headers that a script's envoy_match accepts; a failing script does not match", func() {
		s := Start(newDir(), listenersBootstrap(listenerDef{Name: "m", Chains: []string{matcherChain(
			luaStringMatcher(`function envoy_match(path) return string.find(path, "^/v%d+/") ~= nil end`),
			luaStringMatcher(`function envoy_match(user)
  if user == "boom" then error("a script error") end
  return user == "root" or string.sub(user, 1, 6) == "admin-"
end`),
		)}}))
		waitLive(s)
		addr := listenerAddr(s, "m")
		client := &http.Client{Timeout: 5 * time.Second}
		for _, tc := range []struct{ path, user, want string }{
			{"/v2/items", "", "versioned"},
			{"/v/items", "", "rest"},
			{"/", "root", "admin"},
			{"/", "admin-7", "admin"},
			{"/", "guest", "rest"},
			{"/", "boom", "rest"},
		} {
			h := http.Header{}
			if tc.user != "" {
				h.Set("x-user", tc.user)
			}
			r := httpDo(client, "GET", "http://"+addr+tc.path, nil, h)
			Expect(r.Status).To(Equal(200))
			Expect(r.Body).To(Equal(tc.want), "%s with x-user %q", tc.path, tc.user)
		}
	})

	It("refuses a script without envoy_match with its path", func() {
		r, _ := validate("m.yaml", listenersBootstrap(listenerDef{Name: "m", Port: freePort(), Chains: []string{matcherChain(
			luaStringMatcher(`x = 1`), luaStringMatcher(`function envoy_match(s) return true end`))}}))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("routes[0].match.headers[0].string_match.custom.typed_config.source_code: Lua code did not contain a global function named 'envoy_match'"))
	})
})
