package e2e

import (
	"io"
	"net/http"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// luaResponseTrailersScript reads the response's trailers, changes them,
// and tries to change the headers after (refused: the head left with the
// body).
const luaResponseTrailersScript = `
function envoy_on_response(h)
  local t = h:trailers()
  if t == nil then
    return
  end
  t:add("x-lua-saw", t:get("x-up"))
  t:remove("x-drop")
  if not pcall(function() h:headers():add("x-late", "1") end) then
    t:add("x-late-refused", "yes")
  end
end
`

var _ = Describe("The Lua filter's response trailers()", func() {
	It("lets the response body stream to the client while it waits for the trailers, then applies its changes to them", func() {
		// The upstream (h2c) sends the first part of the body, then waits
		// until the client has read it before it sends the rest and the
		// trailers: a filter that buffered the body would hold that first
		// part until the upstream gave up waiting.
		release := make(chan struct{})
		up := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Trailer", "x-up, x-drop")
			_, _ = io.WriteString(w, "first-part|")
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-time.After(10 * time.Second):
			}
			_, _ = io.WriteString(w, "rest")
			w.Header().Set("x-up", "v1")
			w.Header().Set("x-drop", "gone")
		}), true)
		port := freePort()
		Start(newDir(), proxySpec{
			Port:     port,
			HCM:      "{stat_prefix: web}",
			Filters:  "[" + httpFilter("envoy.filters.http.lua", luaType, `{stat_prefix: my, inline_code: `+strconv.Quote(luaResponseTrailersScript)+`}`) + "]",
			Clusters: []proxyCluster{{Name: "up", Port: portNum(up), Extra: h2cOptions()}},
		}.YAML())

		req, err := http.NewRequest("GET", listenerURL(port, "/"), nil)
		Expect(err).NotTo(HaveOccurred())
		resp, err := httpClients()["HTTP/2"].Do(req)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(200))

		first := make([]byte, len("first-part|"))
		got := make(chan error, 1)
		go func() { _, err := io.ReadFull(resp.Body, first); got <- err }()
		var early bool
		select {
		case err := <-got:
			Expect(err).NotTo(HaveOccurred())
			early = true
		case <-time.After(5 * time.Second):
		}
		close(release)
		if !early {
			Expect(<-got).To(Succeed())
		}
		Expect(early).To(BeTrue(), "the first part of the body reached the client while the upstream held the rest")
		Expect(string(first)).To(Equal("first-part|"))
		rest, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(rest)).To(Equal("rest"))
		Expect(resp.Trailer.Get("x-up")).To(Equal("v1"))
		Expect(resp.Trailer.Get("x-lua-saw")).To(Equal("v1"), "the script read the trailers")
		Expect(resp.Trailer.Values("x-drop")).To(BeEmpty(), "and removed one")
		Expect(resp.Trailer.Get("x-late-refused")).To(Equal("yes"), "the headers had gone with the body")
		Expect(resp.Header.Get("x-late")).To(BeEmpty())
	})
})
