package e2e

import (
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Bad input gets a clear error: never a crash (a Go panic exits with code 2
// and prints "goroutine"), a hang or a 5xx.
var _ = Describe("Bad input", func() {
	DescribeTable("in --config-yaml is refused with exit code 1",
		func(yaml string) {
			r := Run("--mode", "validate", "--config-yaml", yaml)
			Expect(r.ExitCode).To(Equal(1), "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
			Expect(r.Stderr).To(ContainSubstring("error initializing configuration ''"))
			Expect(r.Stderr).NotTo(ContainSubstring("goroutine "))
		},
		Entry("binary garbage (argv cannot hold NUL)", "\x01\xff\xfe\x7f"),
		Entry("a list", "[1, 2]"),
		Entry("a scalar", "42"),
		Entry("an unterminated mapping", "{admin: {"),
		Entry("a wrong type", "admin: 5"),
		Entry("a wrong nested type", "static_resources: {listeners: [{name: 7, address: []}]}"),
		Entry("an empty listener", "static_resources: {listeners: [{}]}"),
		Entry("a typed_config without @type", "static_resources: {listeners: [{name: l, filter_chains: [{filters: [{name: f, typed_config: {}}]}]}]}"),
		Entry("a huge port", "admin: {address: {socket_address: {address: 127.0.0.1, port_value: 99999999999}}}"),
		Entry("a negative port", "admin: {address: {socket_address: {address: 127.0.0.1, port_value: -1}}}"),
		Entry("an unknown enum", "admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0, protocol: SCTP}}}"),
		Entry("deep nesting", strings.Repeat("{a: ", 200)+"1"+strings.Repeat("}", 200)),
	)

	Describe("on the admin interface", func() {
		var s *Sidecar
		BeforeEach(func() {
			s = Start(newDir(), Bootstrap{Runtime: []RuntimeLayer{{Name: "admin"}}}.YAML())
		})

		DescribeTable("is answered without a server error, and the sidecar keeps serving",
			func(method, target string) {
				r := s.Do(method, target, nil, nil)
				Expect(r.Status).To(BeNumerically("<", 500), "%s %s: %s", method, target, r.Body)
				Expect(s.Get("/ready").Body).To(Equal("LIVE\n"))
			},
			Entry("a bad percent-escape", http.MethodGet, "/ready?%zz"),
			Entry("a lone percent in /logging", http.MethodPost, "/logging?%"),
			Entry("a key without a name", http.MethodPost, "/runtime_modify?=v"),
			Entry("only separators", http.MethodPost, "/runtime_modify?&&&"),
			Entry("empty items", http.MethodPost, "/logging?paths=,,"),
			Entry("a flag without a value", http.MethodPost, "/cpuprofiler?enable"),
			Entry("a long key", http.MethodPost, "/runtime_modify?"+strings.Repeat("k", 16<<10)+"=1"),
			Entry("many parameters", http.MethodPost, "/runtime_modify?"+strings.Repeat("a=1&", 2000)),
			Entry("a long unknown path", http.MethodGet, "/"+strings.Repeat("x/", 4000)),
			Entry("dot-dot above the root", http.MethodGet, "/../../ready"),
		)

		It("survives a form body that is not form-encoded", func() {
			r := s.Do(http.MethodPost, "/logging", strings.NewReader("%%%\x00\xff"),
				http.Header{"Content-Type": {"application/x-www-form-urlencoded"}})
			Expect(r.Status).To(BeNumerically("<", 500), r.Body)
			Expect(s.Get("/ready").Body).To(Equal("LIVE\n"))
		})
	})
})
