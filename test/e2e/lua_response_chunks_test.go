package e2e

import (
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// luaResponseChunksScript changes the response headers before the first
// piece of the body leaves (allowed), then again once it has (an error:
// the head left with it).
const luaResponseChunksScript = `
function envoy_on_response(h)
  local n = 0
  for chunk in h:bodyChunks() do
    n = n + 1
    h:headers():replace("x-seen", n)
  end
end
`

var _ = Describe("The Lua filter's response bodyChunks()", func() {
	It("refuses a header change once the first piece of the body has left, as a script error", func() {
		// The upstream sends the first piece, then waits until the client
		// has read it before it sends the rest: the script sees two
		// pieces, the second after the head has gone.
		release := make(chan struct{})
		var once sync.Once
		up := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, "first|")
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-time.After(10 * time.Second):
			}
			_, _ = io.WriteString(w, "rest")
		}), false)
		port := freePort()
		sc := Start(newDir(), proxySpec{
			Port:     port,
			HCM:      "{stat_prefix: web}",
			Filters:  "[" + httpFilter("envoy.filters.http.lua", luaType, `{stat_prefix: my, inline_code: `+strconv.Quote(luaResponseChunksScript)+`}`) + "]",
			Clusters: []proxyCluster{{Name: "up", Port: portNum(up)}},
		}.YAML())
		DeferCleanup(func() { once.Do(func() { close(release) }) })

		resp, err := (&http.Client{Timeout: 20 * time.Second}).Get(listenerURL(port, "/"))
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(200))
		Expect(resp.Header.Get("x-seen")).To(Equal("1"), "the change made before the first piece left went with the head")
		first := make([]byte, len("first|"))
		_, err = io.ReadFull(resp.Body, first)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(first)).To(Equal("first|"))
		once.Do(func() { close(release) })
		rest, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(rest)).To(Equal("rest"), "the response goes on after the script failed")
		Eventually(func() string { return statValue(sc, "http.web.lua.my.errors") }).Should(Equal("1"))
	})
})
