package e2e

import (
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// loggingUsage follows the `error: <message>\n\n` line of a refused /logging
// request.
const loggingUsage = "usage: /logging?<name>=<level> (change single level)\n" +
	"usage: /logging?paths=name1:level1,name2:level2,... (change multiple levels)\n" +
	"usage: /logging?level=<level> (change all levels)\n" +
	"levels: trace debug info warning error critical off \n"

var _ = Describe("/logging", func() {
	var s *Sidecar
	BeforeEach(func() {
		s = Start(newDir(), Bootstrap{}.YAML())
	})

	It("lists the loggers and their levels when given no parameters", func() {
		r := s.Post("/logging")
		Expect(r.Status).To(Equal(200))
		Expect(r.Header.Get("Content-Type")).To(Equal("text/plain; charset=UTF-8"))
		Expect(r.Body).To(HavePrefix("active loggers:\n  admin: info\n"))
		Expect(r.Body).To(HaveSuffix(": info\n\n"))
	})

	DescribeTable("changes levels",
		func(query string, want map[string]string, rest string) {
			r := s.Post("/logging?" + query)
			Expect(r.Status).To(Equal(200), r.Body)
			Expect(r.Body).To(HavePrefix("active loggers:\n"))
			for _, listed := range [][]LoggerLevel{parseLoggers(r.Body), s.LoggerLevels()} {
				for _, l := range listed {
					if w, ok := want[l.Name]; ok {
						Expect(l.Level).To(Equal(w), "logger %s", l.Name)
					} else {
						Expect(l.Level).To(Equal(rest), "logger %s", l.Name)
					}
				}
			}
		},
		Entry("all at once", "level=debug", nil, "debug"),
		Entry("all to off", "level=off", nil, "off"),
		Entry("one logger", "admin=trace", map[string]string{"admin": "trace"}, "info"),
		Entry("several, name:level", "paths=admin:trace,upstream:error",
			map[string]string{"admin": "trace", "upstream": "error"}, "info"),
		Entry("several, name=level", "paths=admin=warning,http=critical",
			map[string]string{"admin": "warning", "http": "critical"}, "info"),
		Entry("several, percent-encoded", "paths=admin%3Adebug%2Crouter%3Atrace",
			map[string]string{"admin": "debug", "router": "trace"}, "info"),
		Entry("empty level and paths are absent", "level=&paths=", nil, "info"),
		Entry("an empty paths beside level", "level=warning&paths=", nil, "warning"),
	)

	It("reads parameters from a form body", func() {
		r := s.Do(http.MethodPost, "/logging", strings.NewReader("paths=admin%3Adebug"),
			http.Header{"Content-Type": {"application/x-www-form-urlencoded"}})
		Expect(r.Status).To(Equal(200), r.Body)
		Expect(levelsByName(s.LoggerLevels())).To(HaveKeyWithValue("admin", "debug"))
	})

	It("ignores a body of another content type", func() {
		r := s.Do(http.MethodPost, "/logging", strings.NewReader("level=trace"),
			http.Header{"Content-Type": {"text/plain"}})
		Expect(r.Status).To(Equal(200), r.Body)
		Expect(levelsByName(s.LoggerLevels())).To(HaveKeyWithValue("admin", "info"))
	})

	DescribeTable("refuses bad requests with 400, the usage, and nothing changed",
		func(query, message string) {
			before := s.LoggerLevels()
			r := s.Post("/logging?" + query)
			Expect(r.Status).To(Equal(400), r.Body)
			Expect(r.Body).To(HavePrefix("error: " + message + "\n\n" + loggingUsage + "active loggers:\n"))
			Expect(parseLoggers(r.Body)).To(Equal(before))
			Expect(s.LoggerLevels()).To(Equal(before))
		},
		Entry("warn is not a level here", "level=warn", "unknown logger level"),
		Entry("unknown level for all", "level=loud", "unknown logger level"),
		Entry("unknown level for one", "admin=loud", "unknown logger level"),
		Entry("unknown logger", "nosuch=debug", "unknown logger name"),
		Entry("one unknown logger among several", "paths=admin:trace,nosuch:debug", "unknown logger name"),
		Entry("one unknown level among several", "paths=admin:trace,upstream:loud", "unknown logger level"),
		Entry("two parameters", "level=trace&admin=debug", "invalid number of parameters"),
		Entry("paths and level", "paths=admin:trace&level=info", "invalid number of parameters"),
		Entry("empty logger name", "paths=:debug", "empty logger name or empty logger level"),
		Entry("empty level", "paths=admin:", "empty logger name or empty logger level"),
	)

	It("refuses a group parameter, which Outrigger does not have", func() {
		before := s.LoggerLevels()
		r := s.Post("/logging?group=http:debug")
		Expect(r.Status).To(Equal(400), r.Body)
		Expect(s.LoggerLevels()).To(Equal(before))
	})
})
