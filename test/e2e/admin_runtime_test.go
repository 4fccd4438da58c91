package e2e

import (
	"net/http"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// runtimeUsage is /runtime_modify's answer to a request without parameters.
const runtimeUsage = "usage: /runtime_modify?key1=value1&key2=value2&keyN=valueN\n" +
	"       or send the parameters as form values\n" +
	"use an empty value to remove a previously added override"

var _ = Describe("/runtime and /runtime_modify", func() {
	Context("with static, disk and admin layers", func() {
		var s *Sidecar

		BeforeEach(func() {
			dir := newDir()
			root := filepath.Join(dir, "runtime")
			writeFile(filepath.Join(root, "current", "shared"), "from-disk\n")
			writeFile(filepath.Join(root, "current", "disk", "only"), "d\n")
			cfg := Bootstrap{Runtime: []RuntimeLayer{
				{Name: "static", Static: map[string]string{"static.only": "s", "shared": "from-static"}},
				{Name: "disk", DiskRoot: root, DiskSubdir: "current"},
				{Name: "admin"},
			}}
			s = Start(dir, cfg.YAML())
		})

		It("lists the layers and every key's value per layer", func() {
			r := s.Get("/runtime")
			Expect(r.Status).To(Equal(200))
			Expect(r.Header.Get("Content-Type")).To(Equal("application/json"))
			Expect(r.Body).To(HaveSuffix("\n}\n"))
			Expect(r.Body).To(ContainSubstring("\n \"layers\": [\n  \"static\",\n  \"disk\",\n  \"admin\"\n ]"), "one-space indent")

			d := s.Runtime()
			Expect(d.Layers).To(Equal([]string{"static", "disk", "admin"}))
			Expect(d.Entries).To(Equal(map[string]RuntimeEntry{
				"static.only": {LayerValues: []string{"s", "", ""}, FinalValue: "s"},
				"shared":      {LayerValues: []string{"from-static", "from-disk", ""}, FinalValue: "from-disk"},
				"disk.only":   {LayerValues: []string{"", "d", ""}, FinalValue: "d"},
			}))
		})

		It("adds and overrides values in the admin layer", func() {
			r := s.Post("/runtime_modify?new.key=1&shared=from-admin")
			Expect(r.Status).To(Equal(200))
			Expect(r.Body).To(Equal("OK\n"))
			d := s.Runtime()
			Expect(d.Entries).To(HaveKeyWithValue("new.key", RuntimeEntry{LayerValues: []string{"", "", "1"}, FinalValue: "1"}))
			Expect(d.Entries).To(HaveKeyWithValue("shared", RuntimeEntry{
				LayerValues: []string{"from-static", "from-disk", "from-admin"}, FinalValue: "from-admin"}))
		})

		It("deletes admin overrides with an empty value, leaving disk and static values", func() {
			Expect(s.Post("/runtime_modify?new.key=1&shared=from-admin").Status).To(Equal(200))

			r := s.Post("/runtime_modify?new.key=&shared=&static.only=")
			Expect(r.Status).To(Equal(200), r.Body)
			Expect(r.Body).To(Equal("OK\n"))
			d := s.Runtime()
			Expect(d.Entries).NotTo(HaveKey("new.key"), "an admin-only key is gone")
			Expect(d.Entries).To(HaveKeyWithValue("shared", RuntimeEntry{
				LayerValues: []string{"from-static", "from-disk", ""}, FinalValue: "from-disk"}))
			Expect(d.Entries).To(HaveKeyWithValue("static.only", RuntimeEntry{
				LayerValues: []string{"s", "", ""}, FinalValue: "s"}), "values loaded from the bootstrap cannot be deleted")
		})

		It("decodes parameters: percent-encoding, first value wins, form bodies", func() {
			Expect(s.Post("/runtime_modify?enc%2Ekey=a%20b%26c&dup=first&dup=second").Status).To(Equal(200))
			r := s.Do(http.MethodPost, "/runtime_modify", strings.NewReader("form.key=from+form"),
				http.Header{"Content-Type": {"application/x-www-form-urlencoded"}})
			Expect(r.Status).To(Equal(200), r.Body)
			d := s.Runtime()
			Expect(d.Entries).To(HaveKeyWithValue("enc.key", HaveField("FinalValue", "a b&c")))
			Expect(d.Entries).To(HaveKeyWithValue("dup", HaveField("FinalValue", "first")))
			Expect(d.Entries).To(HaveKeyWithValue("form.key", HaveField("FinalValue", "from form")))
		})

		It("answers 400 with the usage and changes nothing without parameters", func() {
			before := s.Get("/runtime").Body
			r := s.Post("/runtime_modify")
			Expect(r.Status).To(Equal(400))
			Expect(r.Body).To(Equal(runtimeUsage))
			Expect(s.Get("/runtime").Body).To(Equal(before))
		})
	})

	Context("without an admin layer", func() {
		It("answers 503 and changes nothing", func() {
			s := Start(newDir(), Bootstrap{Runtime: []RuntimeLayer{{Name: "static", Static: map[string]string{"k": "v"}}}}.YAML())
			before := s.Get("/runtime").Body
			r := s.Post("/runtime_modify?k=changed")
			Expect(r.Status).To(Equal(503))
			Expect(r.Body).To(Equal("No admin layer specified"))
			Expect(s.Get("/runtime").Body).To(Equal(before))
		})
	})

	Context("without layered_runtime", func() {
		It("is empty and cannot be modified", func() {
			s := Start(newDir(), Bootstrap{}.YAML())
			d := s.Runtime()
			Expect(d.Layers).To(BeEmpty())
			Expect(d.Entries).To(BeEmpty())
			Expect(s.Get("/runtime").Body).To(SatisfyAny(
				Equal("{\n \"entries\": {},\n \"layers\": []\n}\n"),
				Equal("{\n \"layers\": [],\n \"entries\": {}\n}\n"),
			))
			Expect(s.Post("/runtime_modify?k=v").Status).To(Equal(503))
		})
	})
})
