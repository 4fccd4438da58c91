package httpconn

import (
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	luav3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/lua/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/builtin"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// TestLuaHeldResponseHead runs the Lua filter with a script that reads
// the response body, then changes the headers and the body, over both
// downstream protocols: the head leaves after the script has ended, with
// the headers it set and the length of the body it left.
func TestLuaHeldResponseHead(t *testing.T) {
	script := filter("lua", &luav3.Lua{DefaultSourceCode: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: `
function envoy_on_response(h)
  local b = h:body()
  h:headers():replace("x-body-length", b:length())
  b:setBytes("replaced")
end`}}})
	for _, down := range []string{"HTTP/1.1", "HTTP/2"} {
		t.Run(down, func(t *testing.T) {
			st := stats.NewStore()
			srv := echoUpstream(t)
			cl := newFakeCluster(st, "echo", false, hostOf(srv))
			cfg := hcm(routeConfig(clusterRoute("/", "echo")), script)
			p := startProxy(t, cfg, Deps{Stats: st, Upstreams: fakeUpstreams{"echo": cl}, Extensions: builtin.Registry()})
			c := client()
			if down == "HTTP/2" {
				c = h2cClient()
			}
			status, h, body := do(t, c, "POST", p.url("/up"), strings.NewReader("hello"), nil)
			if status != 200 || body != "replaced" {
				t.Fatalf("status %d, body %q", status, body)
			}
			if h.Get("X-Body-Length") == "" || h.Get("Content-Length") != "8" {
				t.Errorf("x-body-length %q, content-length %q", h.Get("X-Body-Length"), h.Get("Content-Length"))
			}
		})
	}
}
