package e2e

import (
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
)

// mutationLog is the error the admin logs when a mutation arrives with GET;
// specs use it as a log record they can trigger at will.
const mutationLog = `admin path "/healthcheck/fail" mutates state, method=GET rather than POST`

// defaultLinePrefix matches the default format up to the message:
// [%Y-%m-%d %T.%e][%t][%l][%n] [%g:%#] with %g relative to the module root.
const defaultLinePrefix = `\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}\]\[\d+\]\[(trace|debug|info|warning|error|critical)\]\[[\w.]+\] \[[\w.-][\w./-]*\.go:\d+\] `

// cEscape applies C-style escaping as --log-format-escaped does: backslash,
// newline, tab, carriage return (and, as Envoy's absl::CEscape also does,
// double quotes when quotes is set).
func cEscape(s string, quotes bool) string {
	pairs := []string{`\`, `\\`, "\n", `\n`, "\t", `\t`, "\r", `\r`}
	if quotes {
		pairs = append(pairs, `"`, `\"`)
	}
	return strings.NewReplacer(pairs...).Replace(s)
}

// startLogging starts a sidecar that logs to a file flushed every 100 ms and
// returns it with the log file's path.
func startLogging(cfg Bootstrap, args ...string) (*Sidecar, string) {
	GinkgoHelper()
	dir := newDir()
	logPath := filepath.Join(dir, "sidecar.log")
	s := Start(dir, cfg.YAML(), append([]string{"--log-path", logPath, "--file-flush-interval-msec", "100"}, args...)...)
	return s, logPath
}

// stopAndReadLog stops the sidecar cleanly (which flushes the log) and
// returns the whole log file.
func stopAndReadLog(s *Sidecar, logPath string) string {
	GinkgoHelper()
	s.Signal(syscall.SIGINT)
	Expect(s.Wait(stopTimeout)).To(Equal(0))
	return readFile(logPath)
}

var _ = Describe("Logging", func() {
	It("writes the default format to --log-path, flushed on the interval", func() {
		s, logPath := startLogging(Bootstrap{})
		Eventually(func() string { return readFile(logPath) }).Should(MatchRegexp(
			`(?m)^`+defaultLinePrefix+`admin address: %s$`, regexp.QuoteMeta(s.Admin)))
		Expect(readFile(logPath)).To(MatchRegexp(`(?m)^\[[^]]+\]\[\d+\]\[info\]`), "startup is logged at info")
		Expect(s.ServerInfo().GetCommandLineOptions().GetLogPath()).To(Equal(logPath))
	})

	It("writes to stderr without --log-path", func() {
		s := Start(newDir(), Bootstrap{}.YAML())
		Eventually(s.Stderr).Should(MatchRegexp(`(?m)^`+defaultLinePrefix+`admin address: %s$`, regexp.QuoteMeta(s.Admin)))
	})

	It("logs errors of the admin component under its name", func() {
		s, logPath := startLogging(Bootstrap{})
		Expect(s.Get("/healthcheck/fail").Status).To(Equal(400))
		Eventually(func() string { return readFile(logPath) }).Should(MatchRegexp(
			`(?m)^\[[^]]+\]\[\d+\]\[error\]\[admin\] \[[^]]+\] %s$`, regexp.QuoteMeta(mutationLog)))
	})

	It("follows --log-format", func() {
		s, logPath := startLogging(Bootstrap{}, "--log-format", "%l|%L|%n|%v")
		Eventually(func() string { return readFile(logPath) }).Should(MatchRegexp(
			`(?m)^info\|I\|[\w.]+\|admin address: %s$`, regexp.QuoteMeta(s.Admin)))
	})

	It("reports the format and the escaping in /server_info", func() {
		s, _ := startLogging(Bootstrap{}, "--log-format", "%v", "--log-format-escaped")
		opts := s.ServerInfo().GetCommandLineOptions()
		Expect(opts.GetLogFormat()).To(Equal("%v"))
		Expect(opts.GetLogFormatEscaped()).To(BeTrue())
	})

	It("escapes C-style sequences with --log-format-escaped, keeping every record on one line", func() {
		// An unknown field whose name holds a newline and a tab makes the
		// sidecar log a warning that names it: run with and without
		// escaping and compare that record's message.
		cfg := "admin:\n  \"bad\\nfield\\tname\": 1\n  address: {socket_address: {address: 127.0.0.1, port_value: 0}}\n"
		warning := regexp.MustCompile(`(?m)^` + defaultLinePrefix + `(.*bad.*)$`)
		message := func(extra ...string) (string, string) {
			dir := newDir()
			logPath := filepath.Join(dir, "sidecar.log")
			s := Launch(dir, "bootstrap.yaml", cfg, append([]string{"--allow-unknown-static-fields",
				"--log-path", logPath, "--file-flush-interval-msec", "100"}, extra...)...)
			s.WaitForAdmin()
			log := stopAndReadLog(s, logPath)
			m := warning.FindStringSubmatch(log)
			Expect(m).NotTo(BeNil(), "a warning names the field:\n%s", log)
			return m[len(m)-1], log
		}
		plain, _ := message()
		escaped, log := message("--log-format-escaped")

		Expect(escaped).To(SatisfyAny(Equal(cEscape(plain, false)), Equal(cEscape(plain, true))),
			"the escaped message is the plain one with C escapes applied")
		Expect(escaped).NotTo(Equal(plain), "there was something to escape")
		for _, line := range strings.Split(strings.TrimSuffix(log, "\n"), "\n") {
			Expect(line).To(MatchRegexp(`^`+defaultLinePrefix), "every line is a whole record")
		}
	})

	Describe("levels", func() {
		It("filters by -l", func() {
			s, logPath := startLogging(Bootstrap{}, "-l", "error")
			Expect(s.Get("/healthcheck/fail").Status).To(Equal(400))
			log := stopAndReadLog(s, logPath)
			Expect(log).To(ContainSubstring(mutationLog))
			Expect(log).NotTo(ContainSubstring("[info]"))
			Expect(log).NotTo(ContainSubstring("admin address:"))
		})

		It("silences one component with --component-log-level", func() {
			s, logPath := startLogging(Bootstrap{}, "--component-log-level", "admin:off")
			Expect(s.Get("/healthcheck/fail").Status).To(Equal(400))
			Expect(stopAndReadLog(s, logPath)).NotTo(ContainSubstring(mutationLog))
		})

		DescribeTable("are listed by /logging as the command line set them",
			func(args []string, want map[string]string, rest string) {
				s := Start(newDir(), Bootstrap{}.YAML(), args...)
				listed := s.LoggerLevels()
				names := make([]string, len(listed))
				for i, l := range listed {
					names[i] = l.Name
					if w, ok := want[l.Name]; ok {
						Expect(l.Level).To(Equal(w), "logger %s", l.Name)
					} else {
						Expect(l.Level).To(Equal(rest), "logger %s", l.Name)
					}
				}
				Expect(names).To(Equal(logging.ComponentNames()), "every component, in registry order")
			},
			Entry("default", nil, nil, "info"),
			Entry("-l debug", []string{"-l", "debug"}, nil, "debug"),
			Entry("-l warn is warning", []string{"-l", "warn"}, nil, "warning"),
			Entry("--log-level trace", []string{"--log-level", "trace"}, nil, "trace"),
			Entry("component levels", []string{"--component-log-level", "admin:trace,upstream:debug"},
				map[string]string{"admin": "trace", "upstream": "debug"}, "info"),
			Entry("component levels over -l", []string{"-l", "error", "--component-log-level", "http:critical"},
				map[string]string{"http": "critical"}, "error"),
		)

		It("reports them in /server_info", func() {
			s := Start(newDir(), Bootstrap{}.YAML(), "-l", "debug", "--component-log-level", "admin:trace,upstream:debug")
			opts := s.ServerInfo().GetCommandLineOptions()
			Expect(opts.GetLogLevel()).To(Equal("debug"))
			Expect(opts.GetComponentLogLevel()).To(Equal("admin:trace,upstream:debug"))
		})
	})

	Describe("fine-grain logging", func() {
		It("lists source files and sets their levels by glob", func() {
			s, _ := startLogging(Bootstrap{}, "--enable-fine-grain-logging")
			Expect(s.ServerInfo().GetCommandLineOptions().GetEnableFineGrainLogging()).To(BeTrue())
			// Make the admin log something so its file has been seen.
			Expect(s.Get("/healthcheck/fail").Status).To(Equal(400))

			listed := s.LoggerLevels()
			Expect(listed).NotTo(BeEmpty())
			for _, l := range listed {
				Expect(l.Name).To(MatchRegexp(`^[\w.-][\w./-]*\.go$`), "loggers are source files relative to the module root")
				Expect(l.Level).To(Equal("info"))
			}
			Expect(levelsByName(listed)).NotTo(HaveKey("admin"), "component loggers are not listed")

			target := listed[0].Name
			r := s.Post("/logging?paths=" + url.QueryEscape("*"+filepath.Base(target)+":trace"))
			Expect(r.Status).To(Equal(200), r.Body)
			Expect(levelsByName(s.LoggerLevels())).To(HaveKeyWithValue(target, "trace"))

			r = s.Post("/logging?level=debug")
			Expect(r.Status).To(Equal(200), r.Body)
			for _, l := range s.LoggerLevels() {
				Expect(l.Level).To(Equal("debug"), "logger %s", l.Name)
			}

			r = s.Post("/logging?paths=" + url.QueryEscape("no/such/file.go:warning"))
			Expect(r.Status).To(Equal(200), "unknown names are not errors under fine-grain logging: %s", r.Body)
		})

		It("starts files at the -l level", func() {
			s, _ := startLogging(Bootstrap{}, "--enable-fine-grain-logging", "-l", "warning")
			Expect(s.Get("/healthcheck/fail").Status).To(Equal(400))
			listed := s.LoggerLevels()
			Expect(listed).NotTo(BeEmpty())
			for _, l := range listed {
				Expect(l.Level).To(Equal("warning"), "logger %s", l.Name)
			}
		})
	})
})
