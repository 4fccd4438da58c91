package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// refusedMutation is the body of the 400 answer to a mutation without POST.
const refusedMutation = "Method %s not allowed, POST required."

// mutation is one state-changing request and a check that it had no effect.
type mutation struct {
	name      string
	path      string                  // with its query
	prepare   func(s *Sidecar)        // optional, before the refused request
	unchanged func(s *Sidecar, e env) // fails the spec if the request had an effect
}

// env is what a mutation case may need to look at.
type env struct{ profile, accessLog string }

// mutations covers every mutating endpoint of this release.
var mutations = []mutation{
	{
		name: "fail health checks", path: "/healthcheck/fail",
		unchanged: func(s *Sidecar, _ env) {
			Expect(s.Get("/ready").Body).To(Equal("LIVE\n"))
		},
	},
	{
		name: "pass health checks", path: "/healthcheck/ok",
		prepare: func(s *Sidecar) { Expect(s.Post("/healthcheck/fail").Status).To(Equal(200)) },
		unchanged: func(s *Sidecar, _ env) {
			Expect(s.Get("/ready").Body).To(Equal("DRAINING\n"))
		},
	},
	{
		name: "set every log level", path: "/logging?level=trace",
		unchanged: func(s *Sidecar, _ env) {
			for _, l := range s.LoggerLevels() {
				Expect(l.Level).To(Equal("info"), "logger %s", l.Name)
			}
		},
	},
	{
		name: "set one log level", path: "/logging?admin=trace",
		unchanged: func(s *Sidecar, _ env) {
			Expect(levelsByName(s.LoggerLevels())).To(HaveKeyWithValue("admin", "info"))
		},
	},
	{
		name: "modify the runtime", path: "/runtime_modify?x=1",
		unchanged: func(s *Sidecar, _ env) {
			Expect(s.Runtime().Entries).NotTo(HaveKey("x"))
		},
	},
	{
		name: "quit", path: "/quitquitquit",
		unchanged: func(s *Sidecar, _ env) {
			Consistently(s.Running).Should(BeTrue())
			Expect(s.Get("/ready").Status).To(Equal(200))
		},
	},
	{
		name: "start the CPU profiler", path: "/cpuprofiler?enable=y",
		unchanged: func(s *Sidecar, e env) {
			Expect(e.profile).NotTo(BeAnExistingFile())
			// Starting succeeds only because the refused request started nothing.
			Expect(s.Post("/cpuprofiler?enable=y").Status).To(Equal(200))
			Expect(s.Post("/cpuprofiler?enable=n").Status).To(Equal(200))
		},
	},
	{
		name: "start the heap profiler", path: "/heapprofiler?enable=y",
		unchanged: func(s *Sidecar, _ env) {
			Expect(s.Post("/heapprofiler?enable=n").Body).To(Equal("Fail to stop heap profiler: not started"))
		},
	},
	{
		name: "drain the listeners", path: "/drain_listeners",
		unchanged: func(s *Sidecar, _ env) {
			Expect(statValue(s, "listener_manager.listener_stopped")).To(Equal("0"))
			Expect(s.Get("/listeners").Body).To(ContainSubstring("mutations::"))
		},
	},
	{
		name: "reset the counters", path: "/reset_counters",
		prepare: func(s *Sidecar) {
			for range 5 {
				Expect(s.Get("/ready").Status).To(Equal(200))
			}
		},
		unchanged: func(s *Sidecar, _ env) {
			n, err := strconv.Atoi(statValue(s, "http.admin.downstream_rq_total"))
			Expect(err).NotTo(HaveOccurred())
			Expect(n).To(BeNumerically(">=", 5))
		},
	},
	{
		name: "enable recent lookups", path: "/stats/recentlookups/enable",
		unchanged: func(s *Sidecar, _ env) {
			Expect(s.Get("/stats/recentlookups").Body).To(HavePrefix("Lookup tracking is not enabled."))
		},
	},
	{
		name: "disable recent lookups", path: "/stats/recentlookups/disable",
		prepare: func(s *Sidecar) { Expect(s.Post("/stats/recentlookups/enable").Status).To(Equal(200)) },
		unchanged: func(s *Sidecar, _ env) {
			Expect(s.Get("/stats/recentlookups").Body).NotTo(ContainSubstring("not enabled"))
		},
	},
	{
		name: "clear recent lookups", path: "/stats/recentlookups/clear",
		unchanged: func(s *Sidecar, _ env) {
			// Start-up looks stats up by name, so the total is not zero
			// unless a clear went through.
			Expect(s.Get("/stats/recentlookups").Body).NotTo(ContainSubstring("total: 0\n"))
		},
	},
	{
		name: "reopen the logs", path: "/reopen_logs",
		prepare: func(s *Sidecar) {
			log := filepath.Join(s.Dir, "admin_access.log")
			Eventually(func() string { return readFile(log) }).Should(ContainSubstring("GET /ready"))
			Expect(os.Rename(log, log+".1")).To(Succeed())
		},
		unchanged: func(s *Sidecar, e env) {
			// Without a reopen, later requests still go to the renamed file.
			Expect(s.Do(http.MethodGet, "/ready", nil, agent("after-refused-reopen")).Status).To(Equal(200))
			Eventually(func() string { return readFile(e.accessLog + ".1") }).Should(ContainSubstring("after-refused-reopen"))
			Expect(e.accessLog).NotTo(BeAnExistingFile())
		},
	},
}

// mutationNamed returns the case with that name.
func mutationNamed(name string) mutation {
	for _, m := range mutations {
		if m.name == name {
			return m
		}
	}
	panic("no mutation case named " + name)
}

var _ = Describe("Mutations", func() {
	var (
		s *Sidecar
		e env
	)
	BeforeEach(func() {
		dir := newDir()
		e = env{profile: filepath.Join(dir, "sidecar.prof"), accessLog: filepath.Join(dir, "admin_access.log")}
		cfg := Bootstrap{
			ProfilePath:   e.profile,
			AccessLogPath: e.accessLog,
			Runtime:       []RuntimeLayer{{Name: "admin"}},
			// A listener, so that a drain would show.
			Listeners: []Listener{{Name: "mutations", Routes: []DirectRoute{{Path: "/", Status: 200, Body: "ok"}}}},
		}
		s = Start(dir, cfg.YAML(), "--file-flush-interval-msec", "100")
		// Something in the access log before any spec renames it.
		s.WaitLive()
		Expect(s.Get("/ready").Status).To(Equal(200))
	})

	var entries []TableEntry
	for _, m := range mutations {
		entries = append(entries, Entry(m.name+" with GET", m, http.MethodGet))
	}
	for _, method := range []string{http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodHead} {
		entries = append(entries,
			Entry("fail health checks with "+method, mutationNamed("fail health checks"), method),
			Entry("quit with "+method, mutationNamed("quit"), method))
	}

	DescribeTable("are refused with 400 and have no effect unless POSTed",
		func(m mutation, method string) {
			if m.prepare != nil {
				m.prepare(s)
			}
			r := s.Do(method, m.path, nil, nil)
			Expect(r.Status).To(Equal(400))
			if method != http.MethodHead {
				Expect(r.Body).To(Equal(fmt.Sprintf(refusedMutation, method)))
			}
			m.unchanged(s, e)
		},
		entries,
	)

	Describe("cross-origin browser requests", func() {
		DescribeTable("are refused with 403 and have no effect",
			func(header http.Header) {
				r := s.Do(http.MethodPost, "/healthcheck/fail", nil, header)
				Expect(r.Status).To(Equal(403))
				Expect(s.Get("/ready").Body).To(Equal("LIVE\n"))
			},
			Entry("cross-site fetch metadata", http.Header{"Sec-Fetch-Site": {"cross-site"}, "Origin": {"http://attacker.example"}}),
			Entry("same-site but another origin", http.Header{"Sec-Fetch-Site": {"same-site"}, "Origin": {"http://other.localhost"}}),
			Entry("a foreign Origin without fetch metadata", http.Header{"Origin": {"http://attacker.example"}}),
		)

		DescribeTable("are accepted from the admin's own pages and from tools",
			func(header func() http.Header) {
				r := s.Do(http.MethodPost, "/healthcheck/fail", nil, header())
				Expect(r.Status).To(Equal(200), r.Body)
				Expect(s.Get("/ready").Body).To(Equal("DRAINING\n"))
			},
			Entry("same-origin fetch metadata", func() http.Header {
				return http.Header{"Sec-Fetch-Site": {"same-origin"}, "Origin": {"http://" + s.Admin}}
			}),
			Entry("the admin's own Origin", func() http.Header { return http.Header{"Origin": {"http://" + s.Admin}} }),
			Entry("a user-initiated navigation", func() http.Header { return http.Header{"Sec-Fetch-Site": {"none"}} }),
			Entry("curl (no browser headers)", func() http.Header { return nil }),
		)

		It("do not affect reads", func() {
			r := s.Do(http.MethodGet, "/ready", nil, http.Header{"Sec-Fetch-Site": {"cross-site"}, "Origin": {"http://attacker.example"}})
			Expect(r.Status).To(Equal(200))
		})
	})

	It("cover every endpoint that /help marks (POST)", func() {
		// A mutating endpoint added later fails here until it has a case.
		_, posts := helpPaths(s.Get("/help").Body)
		covered := map[string]bool{}
		for _, m := range mutations {
			covered[strings.SplitN(m.path, "?", 2)[0]] = true
		}
		for _, p := range posts {
			Expect(covered).To(HaveKey(p), "no refused-mutation case for %s", p)
		}
	})

	It("keeps the process alive after every refused request", func() {
		for _, m := range mutations {
			Expect(s.Get(m.path).Status).To(Equal(400), m.path)
		}
		Consistently(s.Running, 200*time.Millisecond).Should(BeTrue())
	})
})
