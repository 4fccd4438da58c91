package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// compatDir holds configurations shaped like the ones Envoy's users and
// documentation write, which must load and serve unchanged.
const compatDir = "../../examples/compat"

var _ = Describe("Compatibility tier: real-world configurations", func() {
	It("validates every configuration of examples/compat", func() {
		files, err := filepath.Glob(filepath.Join(compatDir, "*.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(files).NotTo(BeEmpty())
		for _, f := range files {
			r := Run("--mode", "validate", "-c", f)
			Expect(r.ExitCode).To(Equal(0), "%s: %s", f, r.Stderr)
		}
	})

	It("serves Envoy's edge proxy configuration: HTTP/1.1 and h2c clients, an h2c upstream, its path and header rules", func() {
		up := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "%s %s", r.Proto, r.URL.Path)
		}), true)
		_, upPort, _ := strings.Cut(up, ":")
		raw, err := os.ReadFile(filepath.Join(compatDir, "edge.yaml"))
		Expect(err).NotTo(HaveOccurred())
		cfg := string(raw)
		port := freePort()
		for fixed, to := range map[string]string{"9090": "0", "10443": fmt.Sprint(port), "8080": upPort} {
			Expect(strings.Count(cfg, "port_value: "+fixed+" ")).To(Equal(1), "port %s", fixed)
			cfg = strings.Replace(cfg, "port_value: "+fixed+" ", "port_value: "+to+" ", 1)
		}
		s := Start(newDir(), cfg)
		s.WaitLive()
		for proto, client := range httpClients() {
			r := httpDo(client, "GET", listenerURL(port, "/a/./b/../c"), nil, nil)
			Expect(r.Status).To(Equal(200), proto)
			// normalize_path, and the upstream reached over h2c.
			Expect(r.Body).To(Equal("HTTP/2.0 /a/c"), proto)
		}
		// path_with_escaped_slashes_action: UNESCAPE_AND_REDIRECT.
		noRedirect := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		r := httpDo(noRedirect, "GET", listenerURL(port, "/x%2Fy"), nil, nil)
		Expect(r.Status).To(Equal(307))
		Expect(r.Header.Get("Location")).To(Equal("/x/y"))
		// headers_with_underscores_action: REJECT_REQUEST: 400 over
		// HTTP/1.1, a reset stream over HTTP/2.
		r = httpDo(httpClients()["HTTP/1.1"], "GET", listenerURL(port, "/"), nil, http.Header{"X_Forwarded": {"1"}})
		Expect(r.Status).To(Equal(400))
		req, err := http.NewRequest("GET", listenerURL(port, "/"), nil)
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("X_Forwarded", "1")
		resp, err := httpClients()["HTTP/2"].Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		Expect(err).To(HaveOccurred(), "the HTTP/2 stream was answered")
		Expect(statValue(s, "http1.requests_rejected_with_underscores_in_headers")).To(Equal("1"))
		Expect(statValue(s, "http2.requests_rejected_with_underscores_in_headers")).To(Equal("1"))
		Expect(statValue(s, "http.ingress_http.downstream_rq_redirected_with_normalized_path")).To(Equal("1"))
	})
})
