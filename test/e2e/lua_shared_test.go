package e2e

import (
	"encoding/json"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// luaCounter answers every request itself with the number of requests
// its Lua state has seen, kept in a global; tag tells scripts apart
// (another tag is another script).
func luaCounter(tag string) string {
	return `-- ` + tag + `
count = count or 0
function envoy_on_request(h)
  count = count + 1
  h:respond({[":status"] = "200"}, tostring(count))
end`
}

// luaSharedChain is a filter chain (YAML flow style) whose connection
// manager runs script in a Lua filter with shared_vm_id id ("" for none)
// before the router, whose one route answers "router".
func luaSharedChain(id, script string) string {
	GinkgoHelper()
	fields, err := json.Marshal(map[string]any{"shared_vm_id": id, "default_source_code": map[string]any{"inline_string": script}})
	Expect(err).NotTo(HaveOccurred())
	return fmt.Sprintf(`{filters: [{name: envoy.filters.network.http_connection_manager, typed_config: {`+
		`"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager, `+
		`stat_prefix: lua_shared, route_config: {virtual_hosts: [{name: all, domains: ["*"], routes: [{match: {prefix: "/"}, `+
		`direct_response: {status: 200, body: {inline_string: router}}}]}]}, http_filters: [%s, `+
		`{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]}}]}`,
		httpFilter("envoy.filters.http.lua", luaType, string(fields)))
}

var _ = Describe("The Lua filter's shared_vm_id", func() {
	It("shares a script's globals between the listeners whose filters have the same id and script", func() {
		s := Start(newDir(), listenersBootstrap(
			listenerDef{Name: "a", Chains: []string{luaSharedChain("vm", luaCounter("counter"))}},
			listenerDef{Name: "b", Chains: []string{luaSharedChain("vm", luaCounter("counter"))}},
			// Another id, another script under the same id, no id: states
			// of their own.
			listenerDef{Name: "other-id", Chains: []string{luaSharedChain("other", luaCounter("counter"))}},
			listenerDef{Name: "other-script", Chains: []string{luaSharedChain("vm", luaCounter("another"))}},
			listenerDef{Name: "no-id", Chains: []string{luaSharedChain("", luaCounter("counter"))}},
		))
		waitLive(s)
		var got []string
		for _, name := range []string{"a", "b", "a", "b", "other-id", "other-script", "no-id", "a"} {
			got = append(got, getBody(listenerAddr(s, name)))
		}
		Expect(got).To(Equal([]string{"1", "2", "3", "4", "1", "1", "1", "5"}))
	})

	It("keeps shared states while one listener uses them, and drops them with the last over LDS", func() {
		a := listenerDef{Name: "a", Chains: []string{luaSharedChain("vm", luaCounter("counter"))}}
		b := listenerDef{Name: "b", Chains: []string{luaSharedChain("vm", luaCounter("counter"))}}
		plain := listenerDef{Name: "a", Chains: []string{directChain("plain", "")}}
		dir := ldsSetup(ldsResponse("v1", a, b))
		s := Start(newDir(), ldsBootstrap(dir, ldsPath), "--drain-time-s", "1")
		waitLive(s)
		Expect(getBody(listenerAddr(s, "a"))).To(Equal("1"))
		Expect(getBody(listenerAddr(s, "b"))).To(Equal("2"))

		// b goes: a still holds the states, globals and all.
		replaceLDS(dir, ldsResponse("v2", a))
		waitStat(s, "listener_manager.listener_removed", "1")
		waitStat(s, "listener_manager.total_listeners_draining", "0")
		Expect(getBody(listenerAddr(s, "a"))).To(Equal("3"))

		// a's filter goes: nothing holds them once the old a has drained.
		replaceLDS(dir, ldsResponse("v3", plain))
		waitStat(s, "listener_manager.listener_modified", "1")
		waitStat(s, "listener_manager.total_listeners_draining", "0")
		Expect(getBody(listenerAddr(s, "a"))).To(Equal("plain"))

		// The filter comes back with fresh states.
		replaceLDS(dir, ldsResponse("v4", a))
		waitStat(s, "listener_manager.listener_modified", "2")
		Expect(getBody(listenerAddr(s, "a"))).To(Equal("1"))
	})
})
