package e2e

import (
	"encoding/json"
	"strings"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"
)

// Typed readers of admin outputs, so specs state what they expect rather
// than how to parse it.

// ServerInfo fetches /server_info and decodes it as the envoy/admin/v3
// message; a field that is not part of the message fails the decode, except
// command_line_options.hot_restart_version, which the admin specification
// lists and the v3 message has no field for (checked by spec_tail_test.go).
func (s *Sidecar) ServerInfo() *adminv3.ServerInfo {
	GinkgoHelper()
	r := s.Get("/server_info")
	Expect(r.Status).To(Equal(200), r.Body)
	body := strings.Replace(r.Body, "\n  \"hot_restart_version\": false,", "", 1)
	info := &adminv3.ServerInfo{}
	Expect(protojson.Unmarshal([]byte(body), info)).To(Succeed(), r.Body)
	return info
}

// LoggerLevels lists the loggers through POST /logging, in listing order.
func (s *Sidecar) LoggerLevels() []LoggerLevel {
	GinkgoHelper()
	r := s.Post("/logging")
	Expect(r.Status).To(Equal(200), r.Body)
	return parseLoggers(r.Body)
}

// LoggerLevel is one line of the /logging listing.
type LoggerLevel struct{ Name, Level string }

// parseLoggers reads the `active loggers:` block of a /logging answer.
func parseLoggers(body string) []LoggerLevel {
	GinkgoHelper()
	_, list, found := strings.Cut(body, "active loggers:\n")
	Expect(found).To(BeTrue(), "no `active loggers:` block in:\n%s", body)
	var out []LoggerLevel
	for _, line := range strings.Split(list, "\n") {
		if line == "" {
			continue
		}
		Expect(line).To(HavePrefix("  "), "logger line %q", line)
		name, level, ok := strings.Cut(strings.TrimPrefix(line, "  "), ": ")
		Expect(ok).To(BeTrue(), "logger line %q", line)
		out = append(out, LoggerLevel{Name: name, Level: level})
	}
	return out
}

// levelsByName indexes a listing by logger name.
func levelsByName(ls []LoggerLevel) map[string]string {
	m := make(map[string]string, len(ls))
	for _, l := range ls {
		m[l.Name] = l.Level
	}
	return m
}

// RuntimeDump is the /runtime answer.
type RuntimeDump struct {
	Layers  []string                `json:"layers"`
	Entries map[string]RuntimeEntry `json:"entries"`
}

// RuntimeEntry is one key of /runtime.
type RuntimeEntry struct {
	LayerValues []string `json:"layer_values"`
	FinalValue  string   `json:"final_value"`
}

// Runtime fetches and decodes /runtime.
func (s *Sidecar) Runtime() RuntimeDump {
	GinkgoHelper()
	r := s.Get("/runtime")
	Expect(r.Status).To(Equal(200), r.Body)
	var d RuntimeDump
	Expect(json.Unmarshal([]byte(r.Body), &d)).To(Succeed(), r.Body)
	return d
}
