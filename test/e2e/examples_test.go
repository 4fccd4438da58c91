package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// examplesDir is the repository's examples folder, seen from this package.
const examplesDir = "../../examples"

var _ = Describe("Shipped examples", func() {
	It("validates examples/quickstart.yaml, which make run serves", func() {
		r := Run("--mode", "validate", "-c", filepath.Join(examplesDir, "quickstart.yaml"))
		Expect(r.ExitCode).To(Equal(0), r.Stderr)
	})

	It("serves examples/quickstart.yaml, whose data plane and probe listener cannot reach the admin's mutations", func() {
		// The example's fixed ports move to free ones; each must appear
		// as often as the example uses it, so that none is left behind.
		cfg := readFile(filepath.Join(examplesDir, "quickstart.yaml"))
		ports := map[string]int{}
		for fixed, uses := range map[string]int{"10000": 1, "10001": 2, "9901": 2, "9902": 1} {
			Expect(strings.Count(cfg, "port_value: "+fixed+" ")).To(Equal(uses), "port %s", fixed)
			ports[fixed] = freePort()
			cfg = strings.ReplaceAll(cfg, "port_value: "+fixed+" ", fmt.Sprintf("port_value: %d ", ports[fixed]))
		}
		s := Start(newDir(), cfg)
		s.WaitLive()
		client := &http.Client{Timeout: 5 * time.Second}
		at := func(port, method, path string) Response {
			GinkgoHelper()
			return httpDo(client, method, listenerURL(ports[port], path), nil, nil)
		}

		// The README's quickstart lines.
		Expect(at("10000", http.MethodGet, "/").Body).To(Equal("Hello from Outrigger\n"))
		Expect(at("10000", http.MethodGet, "/app/hello").Body).To(Equal("Hello from the app\n"))
		Expect(at("10000", http.MethodGet, "/healthz").Status).To(Equal(http.StatusOK))
		Expect(at("9902", http.MethodGet, "/ready").Body).To(Equal("LIVE\n"))
		Expect(at("9902", http.MethodGet, "/stats/prometheus").Body).To(ContainSubstring("proxy_server_live"))
		Expect(at("9901", http.MethodGet, "/ready").Body).To(Equal("LIVE\n"))

		// No admin mutation through the data plane or the probe
		// listener: the process keeps serving.
		for _, req := range []struct{ port, path string }{
			{"10000", "/admin/quitquitquit"},
			{"10000", "/quitquitquit"},
			{"10000", "/admin/healthcheck/fail"},
			{"9902", "/quitquitquit"},
			{"9902", "/healthcheck/fail"},
			{"9902", "/ready"},
		} {
			r := at(req.port, http.MethodPost, req.path)
			Expect(r.Body).NotTo(Equal("OK\n"), "POST %s on port %s reached the admin", req.path, req.port)
		}
		Expect(at("9902", http.MethodGet, "/config_dump").Status).To(Equal(http.StatusNotFound))
		Consistently(s.Running, time.Second, 100*time.Millisecond).Should(BeTrue(), "a POST through a listener stopped the sidecar")
		Expect(s.Get("/ready").Body).To(Equal("LIVE\n"))
		Expect(at("10000", http.MethodGet, "/healthz").Status).To(Equal(http.StatusOK), "a POST through a listener failed the health checks")
	})

	It("serves the listener of examples/dynamic-listeners once LIVE", func() {
		// The example names its files relative to the repository root and
		// fixed ports; the copy moves both to this spec's own.
		dir := newDir()
		port := freePort()
		lds := readFile(filepath.Join(examplesDir, "dynamic-listeners", "lds.yaml"))
		Expect(lds).To(ContainSubstring("port_value: 10000"))
		writeFile(filepath.Join(dir, "lds.yaml"), strings.Replace(lds, "port_value: 10000", fmt.Sprintf("port_value: %d", port), 1))
		boot := readFile(filepath.Join(examplesDir, "dynamic-listeners", "bootstrap.yaml"))
		Expect(boot).To(ContainSubstring("path: examples/dynamic-listeners/lds.yaml"))
		boot = strings.Replace(boot, "path: examples/dynamic-listeners/lds.yaml", "path: "+filepath.Join(dir, "lds.yaml"), 1)
		boot = strings.Replace(boot, "port_value: 9901", "port_value: 0", 1)

		s := Start(dir, boot)
		s.WaitLive()
		Expect(getBody(fmt.Sprintf("127.0.0.1:%d", port))).To(Equal("hello v1\n"))
	})
})
