package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Lifecycle", func() {
	It("writes the bound admin address, port resolved and without a newline, to --admin-address-path", func() {
		s := Start(newDir(), Bootstrap{}.YAML())
		content := readFile(s.AddressPath)
		Expect(content).To(MatchRegexp(adminAddrPattern.String()))
		Expect(content).NotTo(HaveSuffix("\n"))
		Expect(content).NotTo(Equal("127.0.0.1:0"))
		Expect(s.Get("/ready").Status).To(Equal(200), "the written address is the admin listener's")
	})

	It("keeps running when the admin address file cannot be written", func() {
		port := freePort()
		dir := newDir()
		config := filepath.Join(dir, "bootstrap.yaml")
		writeFile(config, Bootstrap{AdminPort: port}.YAML())
		session := startProcess("-c", config, "--admin-address-path", filepath.Join(dir, "missing", "admin.addr"))
		s := &Sidecar{Dir: dir, Admin: fmt.Sprintf("127.0.0.1:%d", port), session: session,
			client: &http.Client{Timeout: 5 * time.Second}}
		Eventually(func() int {
			if !s.Running() {
				StopTrying("the sidecar exited: " + s.Stderr()).Now()
			}
			resp, err := s.client.Get("http://" + s.Admin + "/ready")
			if err != nil {
				return 0
			}
			resp.Body.Close()
			return resp.StatusCode
		}, startTimeout).Should(Equal(200))
		Expect(s.Stderr()).To(ContainSubstring("admin.addr"), "the failure is logged")
	})

	DescribeTable("exits 1 when a port is taken",
		func(cfg func(port int) Bootstrap) {
			port := holdPort()
			s := Launch(newDir(), "bootstrap.yaml", cfg(port).YAML())
			Expect(s.Wait(startTimeout)).To(Equal(1))
			Expect(s.Stderr()).To(ContainSubstring(fmt.Sprintf("127.0.0.1:%d", port)))
		},
		Entry("the admin port", func(port int) Bootstrap { return Bootstrap{AdminPort: port} }),
		Entry("a listener port", func(port int) Bootstrap {
			return Bootstrap{Listeners: []Listener{helloListener("taken", port, "x")}}
		}),
	)

	It("serves the configured listeners' direct responses", func() {
		port := freePort()
		cfg := Bootstrap{Listeners: []Listener{{
			Name: "direct",
			Port: port,
			Routes: []DirectRoute{
				{Path: "/hello", Status: 200, Body: "hello from outrigger"},
				{Path: "/teapot", Status: 418, Body: "short and stout"},
			},
		}}}
		Start(newDir(), cfg.YAML())
		client := &http.Client{Timeout: 5 * time.Second}

		r := httpDo(client, http.MethodGet, listenerURL(port, "/hello"), nil, nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal("hello from outrigger"))

		r = httpDo(client, http.MethodGet, listenerURL(port, "/teapot"), nil, nil)
		Expect(r.Status).To(Equal(418))
		Expect(r.Body).To(Equal("short and stout"))

		Expect(httpDo(client, http.MethodGet, listenerURL(port, "/elsewhere"), nil, nil).Status).To(Equal(404))
	})

	Describe("states", func() {
		It("is LIVE once started", func() {
			s := Start(newDir(), Bootstrap{}.YAML())
			r := s.Get("/ready")
			Expect(r.Status).To(Equal(200))
			Expect(r.Body).To(Equal("LIVE\n"))
			Expect(s.ServerInfo().GetState()).To(Equal(adminv3.ServerInfo_LIVE))
		})

		It("moves to DRAINING on /healthcheck/fail and back to LIVE on /healthcheck/ok", func() {
			s := Start(newDir(), Bootstrap{}.YAML())

			r := s.Post("/healthcheck/fail")
			Expect(r.Status).To(Equal(200))
			Expect(r.Body).To(Equal("OK\n"))
			r = s.Get("/ready")
			Expect(r.Status).To(Equal(503))
			Expect(r.Body).To(Equal("DRAINING\n"))
			Expect(s.ServerInfo().GetState()).To(Equal(adminv3.ServerInfo_DRAINING))

			// Failing twice is not an error and changes nothing.
			Expect(s.Post("/healthcheck/fail").Status).To(Equal(200))
			Expect(s.Get("/ready").Body).To(Equal("DRAINING\n"))

			r = s.Post("/healthcheck/ok")
			Expect(r.Status).To(Equal(200))
			Expect(r.Body).To(Equal("OK\n"))
			r = s.Get("/ready")
			Expect(r.Status).To(Equal(200))
			Expect(r.Body).To(Equal("LIVE\n"))
			Expect(s.ServerInfo().GetState()).To(Equal(adminv3.ServerInfo_LIVE))
		})
	})

	Describe("exit", func() {
		// SIGTERM with --termination-drain-time-s 0 is Envoy's immediate
		// exit; the termination drain has its own specs.
		DescribeTable("is clean and immediate on a termination signal",
			func(sig syscall.Signal, args ...string) {
				s := Start(newDir(), Bootstrap{}.YAML(), args...)
				s.Signal(sig)
				Expect(s.Wait(stopTimeout)).To(Equal(0), "stderr:\n%s", s.Stderr())
				Expect(s.Stderr()).To(ContainSubstring("shutting down: caught signal"))
				Expect(s.Stderr()).NotTo(ContainSubstring("termination drain started"))
			},
			Entry("SIGTERM without a termination drain", syscall.SIGTERM, "--termination-drain-time-s", "0"),
			Entry("SIGINT", syscall.SIGINT),
		)

		It("is clean while DRAINING", func() {
			s := Start(newDir(), Bootstrap{}.YAML(), "--termination-drain-time-s", "0")
			Expect(s.Post("/healthcheck/fail").Status).To(Equal(200))
			s.Signal(syscall.SIGTERM)
			Expect(s.Wait(stopTimeout)).To(Equal(0), "stderr:\n%s", s.Stderr())
		})

		It("is clean on POST /quitquitquit, which answers first", func() {
			s := Start(newDir(), Bootstrap{}.YAML())
			r := s.Post("/quitquitquit")
			Expect(r.Status).To(Equal(200))
			Expect(r.Body).To(Equal("OK\n"))
			Expect(s.Wait(stopTimeout)).To(Equal(0), "stderr:\n%s", s.Stderr())
		})

		It("stops serving its listeners", func() {
			port := freePort()
			s := Start(newDir(), Bootstrap{Listeners: []Listener{helloListener("l", port, "x")}}.YAML(), "--termination-drain-time-s", "0")
			s.Signal(syscall.SIGTERM)
			Expect(s.Wait(stopTimeout)).To(Equal(0))
			_, err := (&http.Client{Timeout: time.Second}).Get(listenerURL(port, "/hello"))
			Expect(err).To(HaveOccurred(), "the listener is closed once the process has exited")
		})
	})

	Describe("SIGUSR1", func() {
		It("reopens the log file and keeps serving", func() {
			dir := newDir()
			logPath := filepath.Join(dir, "sidecar.log")
			s := Start(dir, Bootstrap{}.YAML(), "--log-path", logPath, "--file-flush-interval-msec", "100")
			Eventually(func() string { return readFile(logPath) }).Should(ContainSubstring("admin address: " + s.Admin))

			// logrotate style: move the file away, then signal.
			rotated := logPath + ".1"
			Expect(os.Rename(logPath, rotated)).To(Succeed())
			s.Signal(syscall.SIGUSR1)
			Eventually(func() bool { _, err := os.Stat(logPath); return err == nil }).Should(BeTrue(),
				"a new log file is created at --log-path")

			// A mutation sent with GET is logged at error level: a record
			// written after the reopen must land in the new file.
			Expect(s.Get("/healthcheck/fail").Status).To(Equal(400))
			Eventually(func() string { return readFile(logPath) }).Should(ContainSubstring(`admin path "/healthcheck/fail" mutates state, method=GET rather than POST`))
			Expect(readFile(rotated)).To(ContainSubstring("admin address: "+s.Admin), "the rotated file keeps what was written before")

			Expect(s.Running()).To(BeTrue())
			Expect(s.Get("/ready").Status).To(Equal(200))
		})
	})
})
