package e2e

import (
	"encoding/json"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("application_log_config", func() {
	It("writes the proxy's own log records in the json_format it gives", func() {
		s := Start(newDir(), minimalYAML+`
application_log_config:
  log_format:
    json_format: {level: "%l", logger: "%n", message: "%j", pid: "%P"}
`)
		// Every record after the bootstrap was read is one JSON object.
		Eventually(func() []map[string]string {
			var recs []map[string]string
			for _, line := range strings.Split(s.Stderr(), "\n") {
				var rec map[string]string
				if json.Unmarshal([]byte(line), &rec) == nil && rec["level"] != "" && rec["logger"] != "" && rec["message"] != "" {
					recs = append(recs, rec)
				}
			}
			return recs
		}).ShouldNot(BeEmpty())
		for _, line := range strings.Split(strings.TrimSpace(s.Stderr()), "\n") {
			if strings.HasPrefix(line, "{") {
				Expect(json.Valid([]byte(line))).To(BeTrue(), line)
			}
		}
	})

	It("writes them in its text_format", func() {
		s := Start(newDir(), minimalYAML+`
application_log_config: {log_format: {text_format: "APPLOG <%l> <%n> %v"}}
`)
		Eventually(s.Stderr).Should(MatchRegexp(`(?m)^APPLOG <info> <\w+> `))
	})

	It("refuses %v in json_format, and a format given by both the bootstrap and --log-format", func() {
		r, _ := validate("b.yaml", minimalYAML+`
application_log_config: {log_format: {json_format: {message: "%v"}}}
`)
		Expect(r.ExitCode).NotTo(Equal(0))
		Expect(r.Stderr).To(ContainSubstring("application_log_config.log_format.json_format: usage of %v is unavailable for JSON log formats"))
		r, _ = validate("b.yaml", minimalYAML+`
application_log_config: {log_format: {text_format: "%v"}}
`, "--log-format", "%v")
		Expect(r.ExitCode).NotTo(Equal(0))
		Expect(r.Stderr).To(ContainSubstring("application_log_config.log_format: only one of application_log_config.log_format or the --log-format option can be given"))
	})
})
