package e2e

import (
	"net/http"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

const ipTaggingType = "type.googleapis.com/envoy.extensions.filters.http.ip_tagging.v3.IPTagging"

var _ = Describe("The ip_tagging filter", func() {
	It("tags requests by the client's address for the upstream and for routing, and counts the tags", func() {
		dir := newDir()
		tagsFile := filepath.Join(dir, "tags.yaml")
		Expect(os.WriteFile(tagsFile, []byte("ip_tags:\n- ip_tag_name: office\n  ip_list: [{address_prefix: 192.0.2.0, prefix_len: 24}]\n"), 0o600)).To(Succeed())
		port, other := freePort(), freePort()
		s := Start(dir, proxySpec{
			Port: port,
			HCM:  `{stat_prefix: web}`,
			Filters: "[" + httpFilter("envoy.filters.http.ip_tagging", ipTaggingType, `{ip_tags: [
				{ip_tag_name: partner, ip_list: [{address_prefix: 203.0.113.0, prefix_len: 24}]},
				{ip_tag_name: bot, ip_list: [{address_prefix: 203.0.113.66, prefix_len: 32}]}]}`) + "]",
			// Routing sees the tags the filter added.
			Routes: `[{match: {prefix: /, headers: [{name: x-envoy-ip-tags, string_match: {exact: "partner,bot"}}]}, direct_response: {status: 403, body: {inline_string: "no bots"}}},
				{match: {prefix: /}, route: {cluster: up}}]`,
			Clusters: []proxyCluster{{Name: "up", Port: portNum(echoHeadersUpstream())}},
			More: []proxySpec{{
				Port:     other,
				Listener: `{name: other}`,
				HCM:      `{stat_prefix: file}`,
				Filters: "[" + httpFilter("envoy.filters.http.ip_tagging", ipTaggingType,
					`{ip_tags_datasource: {filename: "`+tagsFile+`"}, ip_tag_header: {header: x-office, action: SANITIZE}}`) + "]",
				Routes: `[{match: {prefix: /}, route: {cluster: up}}]`,
			}},
		}.YAML())

		from := func(port int, xff string, extra ...string) Response {
			GinkgoHelper()
			h := http.Header{"X-Forwarded-For": {xff}}
			for i := 0; i+1 < len(extra); i += 2 {
				h.Set(extra[i], extra[i+1])
			}
			return httpDo(http.DefaultClient, http.MethodGet, listenerURL(port, "/"), nil, h)
		}
		r := from(port, "203.0.113.7")
		Expect(r.Status).To(Equal(200))
		Expect(tailSeen(r)).To(HaveKeyWithValue("X-Envoy-Ip-Tags", "partner"))
		r = from(port, "203.0.113.66")
		Expect(r.Status).To(Equal(403))
		Expect(r.Body).To(Equal("no bots"))
		// A client's own x-envoy-ip-tags never gets through.
		r = from(port, "198.51.100.1", "X-Envoy-Ip-Tags", "partner")
		Expect(r.Status).To(Equal(200))
		Expect(tailSeen(r)).NotTo(HaveKey("X-Envoy-Ip-Tags"))

		Expect(statValues(s, `^http\.web\.ip_tagging\.`)).To(SatisfyAll(
			HaveKeyWithValue("http.web.ip_tagging.partner.hit", "2"), HaveKeyWithValue("http.web.ip_tagging.bot.hit", "1"),
			HaveKeyWithValue("http.web.ip_tagging.no_hit", "1"), HaveKeyWithValue("http.web.ip_tagging.total", "3"),
		))

		r = from(other, "192.0.2.10", "X-Office", "forged")
		Expect(tailSeen(r)).To(HaveKeyWithValue("X-Office", "office"))
		r = from(other, "198.51.100.1", "X-Office", "forged")
		Expect(tailSeen(r)).NotTo(HaveKey("X-Office"), "SANITIZE removes the header of an untagged request")
		Expect(statValue(s, "http.file.ip_tagging.office.hit")).To(Equal("1"))
		Expect(statValue(s, "http.file.ip_tagging.no_hit")).To(Equal("1"))
	})

	It("refuses a tags file it cannot read or a watched directory, with their paths", func() {
		cfg := func(fields string) string {
			return proxySpec{
				Port:     freePort(),
				Filters:  "[" + httpFilter("envoy.filters.http.ip_tagging", ipTaggingType, fields) + "]",
				Clusters: []proxyCluster{{Name: "up", Port: freePort()}},
			}.YAML()
		}
		const at = "http_filters[0].typed_config."
		r, _ := validate("b.yaml", cfg(`{ip_tags_datasource: {filename: /nonexistent/tags.yaml}}`))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring(at + "ip_tags_datasource.filename: open /nonexistent/tags.yaml"))
		r, _ = validate("b.yaml", cfg(`{ip_tags_datasource: {filename: /tmp/tags.yaml, watched_directory: {path: /tmp}}}`))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring(at + "ip_tags_datasource.watched_directory: not supported by Outrigger"))
	})
})
