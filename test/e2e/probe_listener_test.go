package e2e

import (
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/outrigger-dev/outrigger/pkg/controller/inject"
)

// The probe listener of the injection webhook's default bootstrap, run by the
// real sidecar with the arguments the webhook gives an injected proxy: the
// kubelet and Prometheus reach /ready and /stats/prometheus through it, and
// nothing else of the admin interface.
var _ = Describe("Probe listener of the injected bootstrap", func() {
	// probeSidecar starts the sidecar as an injected container runs it, on
	// free ports. The listener binds 127.0.0.1 instead of the bootstrap's
	// 0.0.0.0, since the suite only uses loopback addresses; the
	// bootstrap's own text is checked by --mode validate below.
	probeSidecar := func() (*Sidecar, int) {
		admin, probe := freePort(), freePort()
		// Two consecutive free ports are distinct in practice; make sure.
		for i := 0; probe == admin && i < 10; i++ {
			probe = freePort()
		}
		Expect(probe).NotTo(Equal(admin))
		config := strings.Replace(inject.DefaultBootstrap(int32(admin), int32(probe)),
			"address: 0.0.0.0,", "address: 127.0.0.1,", 1)
		Expect(config).NotTo(ContainSubstring("0.0.0.0"))
		s := Launch(newDir(), "", "", "--config-yaml", config,
			"--service-node", "app-1.shop", "--service-cluster", "shop")
		s.WaitForAdmin()
		s.WaitLive()
		return s, probe
	}
	probeDo := func(s *Sidecar, port int, method, path string) Response {
		GinkgoHelper()
		return httpDo(s.client, method, listenerURL(port, path), nil, nil)
	}

	It("answers GET /ready with the server state: LIVE, then 503 once health checks fail", func() {
		s, probe := probeSidecar()
		r := probeDo(s, probe, http.MethodGet, "/ready")
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal("LIVE\n"))

		Expect(s.Post("/healthcheck/fail").Status).To(Equal(200))
		r = probeDo(s, probe, http.MethodGet, "/ready")
		Expect(r.Status).To(Equal(503))
		Expect(r.Body).To(Equal("DRAINING\n"))
	})

	It("serves GET /stats/prometheus in Prometheus's text format", func() {
		s, probe := probeSidecar()
		// One request through the listener first, so that its own
		// connection manager's counters have a value.
		Expect(probeDo(s, probe, http.MethodGet, "/ready").Status).To(Equal(200))
		r := probeDo(s, probe, http.MethodGet, "/stats/prometheus")
		Expect(r.Status).To(Equal(200))
		Expect(r.Header.Get("Content-Type")).To(HavePrefix("text/plain"))
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err := parser.TextToMetricFamilies(strings.NewReader(r.Body))
		Expect(err).NotTo(HaveOccurred(), r.Body)
		Expect(families).To(HaveKey("proxy_server_live"))
		Expect(families["proxy_server_live"].GetMetric()[0].GetGauge().GetValue()).To(Equal(1.0))
		Expect(families).To(HaveKey("proxy_http_downstream_rq_total"))
		prefixes := []string{}
		for _, m := range families["proxy_http_downstream_rq_total"].GetMetric() {
			for _, l := range m.GetLabel() {
				prefixes = append(prefixes, l.GetValue())
			}
		}
		Expect(prefixes).To(ContainElement("probe"), "the probe listener's own stats")
	})

	DescribeTable("refuses everything else with 404, without reaching the admin",
		func(method, path string) {
			s, probe := probeSidecar()
			r := probeDo(s, probe, method, path)
			Expect(r.Status).To(Equal(404), "%s %s answered %q", method, path, r.Body)
			Expect(r.Body).To(Equal("not found\n"))
			// Nothing happened on the admin side: still running and LIVE.
			Expect(s.Running()).To(BeTrue())
			Expect(s.Get("/ready").Body).To(Equal("LIVE\n"))
		},
		Entry("POST /quitquitquit", http.MethodPost, "/quitquitquit"),
		Entry("GET /config_dump", http.MethodGet, "/config_dump"),
		Entry("POST /healthcheck/fail", http.MethodPost, "/healthcheck/fail"),
		Entry("POST /ready", http.MethodPost, "/ready"),
		Entry("GET /stats", http.MethodGet, "/stats"),
		Entry("GET /", http.MethodGet, "/"),
		Entry("a path that walks out of /ready", http.MethodGet, "/ready/../config_dump"),
		Entry("a longer path", http.MethodGet, "/stats/prometheus/extra"),
	)

	It("is accepted by --mode validate as the webhook injects it", func() {
		r := Run("--mode", "validate", "--config-yaml", inject.DefaultBootstrap(9901, 9902),
			"--service-node", "app-1.shop", "--service-cluster", "shop")
		Expect(r.ExitCode).To(Equal(0), r.Stderr)
	})
})
