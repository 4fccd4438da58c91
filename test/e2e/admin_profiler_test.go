package e2e

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// enableUsage is the profilers' answer to anything but exactly one enable=y|n.
const enableUsage = "?enable=<y|n>\n"

// expectProfile checks that path holds a pprof profile (gzip-compressed).
func expectProfile(path string) {
	GinkgoHelper()
	b, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred(), "the profile is written to admin.profile_path")
	Expect(len(b)).To(BeNumerically(">", 2))
	Expect(b[:2]).To(Equal([]byte{0x1f, 0x8b}), "pprof profiles are gzip-compressed")
}

var _ = Describe("Profilers", func() {
	var (
		s       *Sidecar
		profile string
	)
	BeforeEach(func() {
		dir := newDir()
		profile = filepath.Join(dir, "sidecar.prof")
		s = Start(dir, Bootstrap{ProfilePath: profile}.YAML())
	})

	usageCases := []TableEntry{
		Entry("no parameter", ""),
		Entry("another value", "?enable=yes"),
		Entry("an empty value", "?enable="),
		Entry("another parameter", "?other=y"),
		Entry("a second parameter", "?enable=y&other=1"),
	}

	Describe("/cpuprofiler", func() {
		DescribeTable("needs exactly enable=y or enable=n",
			func(query string) {
				r := s.Post("/cpuprofiler" + query)
				Expect(r.Status).To(Equal(400))
				Expect(r.Body).To(Equal(enableUsage))
				Expect(profile).NotTo(BeAnExistingFile(), "nothing was started")
			},
			usageCases,
		)

		It("writes a CPU profile to admin.profile_path", func() {
			r := s.Post("/cpuprofiler?enable=y")
			Expect(r.Status).To(Equal(200))
			Expect(r.Body).To(Equal("OK\n"))

			r = s.Post("/cpuprofiler?enable=y")
			Expect(r.Status).To(Equal(500), "already running")
			Expect(r.Body).To(Equal("failure to start the profiler"))

			r = s.Post("/cpuprofiler?enable=n")
			Expect(r.Status).To(Equal(200))
			Expect(r.Body).To(Equal("OK\n"))
			expectProfile(profile)

			Expect(s.Post("/cpuprofiler?enable=n").Status).To(Equal(200), "stopping a stopped profiler is fine")
			Expect(s.Post("/cpuprofiler?enable=y").Status).To(Equal(200), "it can run again")
			Expect(s.Post("/cpuprofiler?enable=n").Status).To(Equal(200))
		})

		It("answers 500 when the profile cannot be created", func() {
			dir := newDir()
			d := Start(dir, Bootstrap{ProfilePath: filepath.Join(dir, "missing", "sidecar.prof")}.YAML())
			r := d.Post("/cpuprofiler?enable=y")
			Expect(r.Status).To(Equal(500))
			Expect(r.Body).To(Equal("failure to start the profiler"))
			Expect(d.Post("/cpuprofiler?enable=n").Status).To(Equal(200))
		})
	})

	Describe("/heapprofiler", func() {
		DescribeTable("needs exactly enable=y or enable=n",
			func(query string) {
				r := s.Post("/heapprofiler" + query)
				Expect(r.Status).To(Equal(400))
				Expect(r.Body).To(Equal(enableUsage))
				r = s.Post("/heapprofiler?enable=n")
				Expect(r.Body).To(Equal("Fail to stop heap profiler: not started"), "nothing was started")
			},
			usageCases,
		)

		It("writes a heap profile to admin.profile_path", func() {
			r := s.Post("/heapprofiler?enable=n")
			Expect(r.Status).To(Equal(400))
			Expect(r.Body).To(Equal("Fail to stop heap profiler: not started"))

			r = s.Post("/heapprofiler?enable=y")
			Expect(r.Status).To(Equal(200))
			Expect(r.Body).To(Equal("Starting heap profiler"))

			r = s.Post("/heapprofiler?enable=y")
			Expect(r.Status).To(Equal(400))
			Expect(r.Body).To(Equal("Fail to start heap profiler: already started"))

			r = s.Post("/heapprofiler?enable=n")
			Expect(r.Status).To(Equal(200))
			Expect(r.Body).To(Equal("Heap profiler stopped and data written to " + profile + "."))
			expectProfile(profile)
		})
	})
})
