package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

const customResponseType = "type.googleapis.com/envoy.extensions.filters.http.custom_response.v3.CustomResponse"

// localPolicy is an on_match action (JSON) of a local_response_policy
// with the given fields.
func localPolicy(fields string) string {
	return `{action: {name: local, typed_config: {"@type": type.googleapis.com/envoy.extensions.http.custom_response.local_response_policy.v3.LocalResponsePolicy, ` + fields + `}}}`
}

// statusClassIs and statusIs are single predicates on the response
// status; headerIs on a request header.
func statusClassIs(class string) string {
	return `{single_predicate: {input: {name: class, typed_config: {"@type": type.googleapis.com/envoy.type.matcher.v3.HttpResponseStatusCodeClassMatchInput}}, value_match: {exact: "` + class + `"}}}`
}

func statusIs(code int) string {
	return `{single_predicate: {input: {name: code, typed_config: {"@type": type.googleapis.com/envoy.type.matcher.v3.HttpResponseStatusCodeMatchInput}}, value_match: {exact: "` + strconv.Itoa(code) + `"}}}`
}

func headerIs(name, value string) string {
	return `{single_predicate: {input: {name: hdr, typed_config: {"@type": type.googleapis.com/envoy.type.matcher.v3.HttpRequestHeaderMatchInput, header_name: ` + name + `}}, value_match: {exact: "` + value + `"}}}`
}

var _ = Describe("The custom_response filter", func() {
	It("replaces the responses its matchers choose, the most specific route level first, upstream answers and local replies alike", func() {
		up := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			code, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path[strings.LastIndexByte(r.URL.Path, '/'):], "/"))
			w.Header().Set("x-upstream", "yes")
			w.WriteHeader(code)
			_, _ = w.Write([]byte("upstream body " + strconv.Itoa(code)))
		}), false)
		dir := newDir()
		page := filepath.Join(dir, "gone.html")
		Expect(os.WriteFile(page, []byte("<p>gone for good</p>"), 0o600)).To(Succeed())
		port := freePort()
		filterMatcher := `{custom_response_matcher: {matcher_list: {matchers: [
			{predicate: ` + statusIs(404) + `, on_match: ` + localPolicy(`status_code: 410, body: {filename: "`+page+`"}, response_headers_to_add: [{header: {key: x-custom, value: gone}}]`) + `},
			{predicate: ` + statusClassIs("5xx") + `, on_match: ` + localPolicy(`body: {inline_string: "we are down"}`) + `}]}}}`
		perRoute := `{envoy.filters.http.custom_response: {"@type": ` + customResponseType + `, custom_response_matcher: {matcher_list: {matchers: [
			{predicate: {and_matcher: {predicate: [` + statusClassIs("5xx") + `, ` + headerIs("x-tenant", "gold") + `]}}, on_match: ` + localPolicy(`status_code: 599, body: {inline_string: "gold outage"}`) + `}]}}}}`
		Start(dir, proxySpec{
			Port:    port,
			Filters: "[" + httpFilter("envoy.filters.http.custom_response", customResponseType, filterMatcher) + "]",
			Routes: `[{match: {prefix: /special/}, route: {cluster: up}, typed_per_filter_config: ` + perRoute + `},
				{match: {prefix: /nowhere}, route: {cluster: dead}},
				{match: {prefix: /}, route: {cluster: up}}]`,
			Clusters: []proxyCluster{{Name: "up", Port: portNum(up)}, {Name: "dead", Port: freePort()}},
		}.YAML())

		get := func(path string, header http.Header) Response {
			GinkgoHelper()
			return httpDo(http.DefaultClient, http.MethodGet, listenerURL(port, path), nil, header)
		}
		r := get("/a/200", nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal("upstream body 200"))

		r = get("/a/404", nil)
		Expect(r.Status).To(Equal(410))
		Expect(r.Body).To(Equal("<p>gone for good</p>"))
		Expect(r.Header.Get("x-custom")).To(Equal("gone"))
		Expect(r.Header.Get("content-type")).To(Equal("text/plain"))
		Expect(r.Header.Get("content-length")).To(Equal(strconv.Itoa(len("<p>gone for good</p>"))))
		Expect(r.Header.Get("x-upstream")).To(BeEmpty(), "the upstream's headers went through")

		r = get("/a/502", nil)
		Expect(r.Status).To(Equal(502), "the status is kept without status_code")
		Expect(r.Body).To(Equal("we are down"))

		// The router's own 503 (nothing listens) is replaced too.
		r = get("/nowhere", nil)
		Expect(r.Status).To(Equal(503))
		Expect(r.Body).To(Equal("we are down"))

		// The route's matcher comes first; when it does not match, the
		// filter's does.
		r = get("/special/503", http.Header{"X-Tenant": {"gold"}})
		Expect(r.Status).To(Equal(599))
		Expect(r.Body).To(Equal("gold outage"))
		r = get("/special/503", nil)
		Expect(r.Status).To(Equal(503))
		Expect(r.Body).To(Equal("we are down"))

		// Over HTTP/2 as well.
		h2c := new(http.Protocols)
		h2c.SetUnencryptedHTTP2(true)
		r = httpDo(&http.Client{Transport: &http.Transport{Protocols: h2c}}, http.MethodGet, listenerURL(port, "/b/404"), nil, nil)
		Expect(r.Status).To(Equal(410))
		Expect(r.Body).To(Equal("<p>gone for good</p>"))
	})

	It("formats the body with body_format and sets the response code details as the policy says", func() {
		up := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("x-why", "quota")
			w.WriteHeader(http.StatusTooManyRequests)
		}), false)
		dir := newDir()
		logPath := filepath.Join(dir, "access.log")
		port := freePort()
		matcher := `{custom_response_matcher: {matcher_list: {matchers: [
			{predicate: ` + headerIs("x-case", "format") + `, on_match: ` + localPolicy(`status_code: 503, body: {inline_string: "slow down"},
				body_format: {text_format_source: {inline_string: "%LOCAL_REPLY_BODY% (%RESPONSE_CODE% %RESP(x-why)% %REQ(:path)%)"}}, response_code_details: custom_quota`) + `},
			{predicate: ` + headerIs("x-case", "keep") + `, on_match: ` + localPolicy(`body: {inline_string: "kept"}, preserve_response_code_details: true`) + `},
			{predicate: ` + headerIs("x-case", "clear") + `, on_match: ` + localPolicy(`body: {inline_string: "cleared"}`) + `}]}}}`
		Start(dir, proxySpec{
			Port:     port,
			HCM:      `{stat_prefix: web, access_log: [` + fileLog(logPath, "%REQ(x-case)% %RESPONSE_CODE% [%RESPONSE_CODE_DETAILS%]\n") + `]}`,
			Filters:  "[" + httpFilter("envoy.filters.http.custom_response", customResponseType, matcher) + "]",
			Clusters: []proxyCluster{{Name: "up", Port: portNum(up)}},
		}.YAML(), "--file-flush-interval-msec", "100")

		r := httpDo(http.DefaultClient, http.MethodGet, listenerURL(port, "/q"), nil, http.Header{"X-Case": {"format"}})
		Expect(r.Status).To(Equal(503))
		Expect(r.Body).To(Equal("slow down (429 quota /q)"))
		Expect(r.Header.Get("content-type")).To(Equal("text/plain"))
		Expect(httpDo(http.DefaultClient, http.MethodGet, listenerURL(port, "/q"), nil, http.Header{"X-Case": {"keep"}}).Body).To(Equal("kept"))
		Expect(httpDo(http.DefaultClient, http.MethodGet, listenerURL(port, "/q"), nil, http.Header{"X-Case": {"clear"}}).Body).To(Equal("cleared"))
		Eventually(func() string { return readFile(logPath) }).Should(And(
			ContainSubstring("format 503 [custom_quota]\n"),
			ContainSubstring("keep 429 [via_upstream]\n"),
			MatchRegexp(`(?m)^clear 429 \[-?\]$`)))
	})
})
