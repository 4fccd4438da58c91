package e2e

import (
	"net/http"
	"regexp"
	"slices"
	"strings"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"
)

// mutatingPaths are the endpoints of this release that change state: POST
// only. Sorted, as /help lists them.
var mutatingPaths = []string{
	"/cpuprofiler", "/drain_listeners", "/healthcheck/fail", "/healthcheck/ok", "/heapprofiler",
	"/logging", "/quitquitquit", "/reopen_logs", "/reset_counters", "/runtime_modify",
	"/stats/recentlookups/clear", "/stats/recentlookups/disable", "/stats/recentlookups/enable",
}

// readOnlyPaths are the endpoints of this release that any method may read.
var readOnlyPaths = []string{
	"/certs", "/clusters", "/config_dump", "/contention", "/help", "/hot_restart_version",
	"/init_dump", "/listeners", "/memory", "/ready", "/runtime", "/server_info", "/stats",
	"/stats/prometheus", "/stats/recentlookups",
}

// helpPaths returns the endpoint paths /help lists, in its order, and those
// it marks (POST).
func helpPaths(help string) (paths, posts []string) {
	line := regexp.MustCompile(`(?m)^  (/[^ :]*)( \(POST\))?: `)
	for _, m := range line.FindAllStringSubmatch(help, -1) {
		paths = append(paths, m[1])
		if m[2] != "" {
			posts = append(posts, m[1])
		}
	}
	return paths, posts
}

var _ = Describe("Admin interface", func() {
	var s *Sidecar
	BeforeEach(func() {
		s = Start(newDir(), Bootstrap{}.YAML())
	})

	Describe("/help", func() {
		It("lists every endpoint, sorted, with (POST) on mutations", func() {
			r := s.Get("/help")
			Expect(r.Status).To(Equal(200))
			Expect(r.Header.Get("Content-Type")).To(Equal("text/plain; charset=UTF-8"))
			Expect(r.Body).To(HavePrefix("admin commands are:\n"))

			paths, posts := helpPaths(r.Body)
			Expect(slices.IsSorted(paths)).To(BeTrue(), "sorted by path: %v", paths)
			Expect(paths).To(ContainElements(append([]string{"/"}, append(mutatingPaths, readOnlyPaths...)...)))
			Expect(posts).To(Equal(mutatingPaths), "exactly the mutations are marked (POST)")

			for _, line := range []string{
				"  /: Admin home page\n",
				"  /certs: print certs on machine\n",
				"  /cpuprofiler (POST): enable/disable the CPU profiler\n      enable: enables the CPU profiler; One of (y, n)\n",
				"  /healthcheck/fail (POST): cause the server to fail health checks\n",
				"  /healthcheck/ok (POST): cause the server to pass health checks\n",
				"  /heapprofiler (POST): enable/disable the heap profiler\n",
				"  /help: print out list of admin commands\n",
				"  /hot_restart_version: print the hot restart compatibility version\n",
				"  /logging (POST): query/change logging levels\n",
				"  /memory: print current allocation/heap usage\n",
				"  /quitquitquit (POST): exit the server\n",
				"  /ready: print server state, return 200 if LIVE, otherwise return 503\n",
				"  /reopen_logs (POST): reopen access logs\n",
				"  /runtime: print runtime values\n",
				"  /server_info: print server version/status information\n",
			} {
				Expect(r.Body).To(ContainSubstring(line))
			}
			expectGolden("help.txt", r.Body)
		})

		It("is served after `invalid path. ` with 404 for an unknown path", func() {
			help := s.Get("/help").Body
			for _, path := range []string{"/nope", "/ready/", "/Ready", "/help/extra", "/healthcheck"} {
				r := s.Get(path)
				Expect(r.Status).To(Equal(404), path)
				Expect(r.Body).To(Equal("invalid path. "+help), path)
			}
		})
	})

	Describe("/", func() {
		It("is a self-contained HTML page generated from the route table", func() {
			r := s.Get("/")
			Expect(r.Status).To(Equal(200))
			Expect(r.Header.Get("Content-Type")).To(Equal("text/html; charset=UTF-8"))
			Expect(r.Body).To(ContainSubstring("<title>Outrigger Admin</title>"))
			for _, p := range mutatingPaths {
				rel := strings.TrimPrefix(p, "/")
				Expect(r.Body).To(ContainSubstring("<form action='"+rel+"' method='post'"), p)
				Expect(r.Body).NotTo(ContainSubstring("href='"+rel+"'"), "mutations are never plain links: %s", p)
			}
			for _, p := range []string{"/certs", "/help", "/memory", "/ready", "/server_info", "/hot_restart_version"} {
				Expect(r.Body).To(ContainSubstring("href='"+strings.TrimPrefix(p, "/")+"'"), p)
			}
			// Parameters become inputs bound to their endpoint's form.
			Expect(r.Body).To(MatchRegexp(`<select[^>]*name='enable'[^>]*form='cpuprofiler'|<select[^>]*form='cpuprofiler'[^>]*name='enable'`))
			Expect(r.Body).To(MatchRegexp(`<select[^>]*name='level'[^>]*form='logging'|<select[^>]*form='logging'[^>]*name='level'`))
			// No scripts and nothing fetched from elsewhere.
			Expect(r.Body).NotTo(MatchRegexp(`(?i)<script`))
			Expect(r.Body).NotTo(MatchRegexp(`(?i)(href|src)=['"]?(https?:)?//`))
		})
	})

	Describe("response headers", func() {
		DescribeTable("carry the admin defaults",
			func(method, path string, status int, contentType string) {
				r := s.Do(method, path, nil, nil)
				Expect(r.Status).To(Equal(status))
				Expect(r.Header.Get("Content-Type")).To(Equal(contentType))
				Expect(r.Header.Get("Cache-Control")).To(Equal("no-cache, max-age=0"))
				Expect(r.Header.Get("X-Content-Type-Options")).To(Equal("nosniff"))
				Expect(r.Header.Get("Server")).To(Equal("outrigger"))
			},
			Entry("text", http.MethodGet, "/ready", 200, "text/plain; charset=UTF-8"),
			Entry("JSON", http.MethodGet, "/server_info", 200, "application/json"),
			Entry("HTML", http.MethodGet, "/", 200, "text/html; charset=UTF-8"),
			Entry("not found", http.MethodGet, "/nope", 404, "text/plain; charset=UTF-8"),
			Entry("refused mutation", http.MethodGet, "/quitquitquit", 400, "text/plain; charset=UTF-8"),
			Entry("mutation", http.MethodPost, "/healthcheck/ok", 200, "text/plain; charset=UTF-8"),
		)
	})

	DescribeTable("normalizes the path before matching",
		func(path string) {
			r := s.Get(path)
			Expect(r.Status).To(Equal(200), path)
			Expect(r.Body).To(Equal("LIVE\n"))
		},
		Entry("merged slashes", "//ready"),
		Entry("dot segment", "/./ready"),
		Entry("dot-dot segment", "/elsewhere/../ready"),
		Entry("query string ignored", "/ready?verbose=1"),
	)

	It("answers read-only endpoints whatever the method", func() {
		for _, p := range readOnlyPaths {
			for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut} {
				Expect(s.Do(m, p, nil, nil).Status).To(Equal(200), "%s %s", m, p)
			}
		}
	})

	Describe("/hot_restart_version", func() {
		It("matches --hot-restart-version, without a newline", func() {
			r := s.Get("/hot_restart_version")
			Expect(r.Status).To(Equal(200))
			Expect(r.Body).To(Equal(Run("--hot-restart-version").Stderr))
			Expect(r.Body).To(Equal("1.60.16384"))
			Expect(s.ServerInfo().GetHotRestartVersion()).To(Equal("1.60.16384"))
		})

		It("says disabled with --disable-hot-restart", func() {
			d := Start(newDir(), Bootstrap{}.YAML(), "--disable-hot-restart")
			Expect(d.Get("/hot_restart_version").Body).To(Equal("disabled"))
			Expect(d.ServerInfo().GetHotRestartVersion()).To(Equal("disabled"))
		})
	})

	Describe("/memory", func() {
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			It("reports the Go runtime's memory figures on "+method, func() {
				r := s.Do(method, "/memory", nil, nil)
				Expect(r.Status).To(Equal(200))
				Expect(r.Header.Get("Content-Type")).To(Equal("application/json"))
				for _, field := range []string{"allocated", "heap_size", "pageheap_unmapped", "pageheap_free", "total_thread_cache", "total_physical_bytes"} {
					Expect(r.Body).To(MatchRegexp(`\n "%s": "\d+"`, field), "64-bit figures are strings, zeros printed")
				}
				Expect(r.Body).To(HaveSuffix("}\n"))
				m := &adminv3.Memory{}
				Expect(protojson.Unmarshal([]byte(r.Body), m)).To(Succeed())
				Expect(m.GetAllocated()).To(BeNumerically(">", 0))
				Expect(m.GetHeapSize()).To(BeNumerically(">=", m.GetAllocated()))
				Expect(m.GetTotalPhysicalBytes()).To(BeNumerically(">", 0))
			})
		}
	})

	Describe("/certs", func() {
		It("is an empty list without TLS contexts", func() {
			r := s.Get("/certs")
			Expect(r.Status).To(Equal(200))
			Expect(r.Header.Get("Content-Type")).To(Equal("application/json"))
			Expect(r.Body).To(Equal("{\n \"certificates\": []\n}\n"))
		})
	})

	Describe("/contention", func() {
		It("explains how to enable mutex tracing when it is off", func() {
			r := s.Get("/contention")
			Expect(r.Status).To(Equal(200))
			Expect(r.Header.Get("Content-Type")).To(Equal("text/plain; charset=UTF-8"))
			Expect(r.Body).To(Equal("Mutex contention tracing is not enabled. To enable, run the proxy with flag --enable-mutex-tracing."))
		})

		It("reports MutexStats with --enable-mutex-tracing", func() {
			t := Start(newDir(), Bootstrap{}.YAML(), "--enable-mutex-tracing")
			for range 2 { // the second call measures since the first
				r := t.Get("/contention")
				Expect(r.Status).To(Equal(200))
				Expect(r.Header.Get("Content-Type")).To(Equal("application/json"))
				for _, field := range []string{"num_contentions", "current_wait_cycles", "lifetime_wait_cycles"} {
					Expect(r.Body).To(MatchRegexp(`\n "%s": "\d+"`, field), "always printed, as strings")
				}
				Expect(protojson.Unmarshal([]byte(r.Body), &adminv3.MutexStats{})).To(Succeed())
			}
			Expect(t.ServerInfo().GetCommandLineOptions().GetEnableMutexTracing()).To(BeTrue())
		})
	})

	Describe("/reopen_logs", func() {
		It("succeeds with nothing to reopen", func() {
			r := s.Post("/reopen_logs")
			Expect(r.Status).To(Equal(200))
			Expect(r.Body).To(Equal("OK\n"))
		})
	})
})
