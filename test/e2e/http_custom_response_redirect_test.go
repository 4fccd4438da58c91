package e2e

import (
	"io"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// redirectPolicy is an on_match action (JSON) of a redirect_policy with
// the given fields.
func redirectPolicy(fields string) string {
	return `{action: {name: redirect, typed_config: {"@type": type.googleapis.com/envoy.extensions.http.custom_response.redirect_policy.v3.RedirectPolicy, ` + fields + `}}}`
}

// errorPageSeen is what the error page upstream saw of a request.
type errorPageSeen struct {
	method, host, path, marker, contentLength, body string
}

var _ = Describe("The custom_response filter's redirect policy", func() {
	It("sends the request again through the route table, and the redirect target's response is the client's", func() {
		app := func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("x-app", "yes")
			switch {
			case strings.HasSuffix(r.URL.Path, "/fail"):
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte("app broken"))
			case strings.HasSuffix(r.URL.Path, "/gone"):
				w.WriteHeader(http.StatusNotFound)
				_, _ = w.Write([]byte("app lost it"))
			case strings.HasSuffix(r.URL.Path, "/bad"):
				w.WriteHeader(http.StatusBadGateway)
				_, _ = w.Write([]byte("app bad gateway"))
			default:
				_, _ = w.Write([]byte("app fine"))
			}
		}
		app1 := httpTestUpstream(http.HandlerFunc(app), false)
		app2 := httpTestUpstream(http.HandlerFunc(app), true)
		seen := make(chan errorPageSeen, 16)
		pages := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			seen <- errorPageSeen{r.Method, r.Host, r.URL.RequestURI(), r.Header.Get("x-cr"), r.Header.Get("content-length"), string(b)}
			w.Header().Set("x-page", r.URL.Path)
			if r.URL.Path == "/errors/404.html" {
				// The error page's own failure is relayed untouched.
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = w.Write([]byte("error page failed"))
				return
			}
			_, _ = w.Write([]byte("<h1>sorry</h1>"))
		}), false)
		port := freePort()
		matcher := `{custom_response_matcher: {matcher_list: {matchers: [
			{predicate: ` + statusIs(503) + `, on_match: ` + redirectPolicy(`uri: "http://errors.local/errors/503.html?from=cr#top", status_code: 299,
				response_headers_to_add: [{header: {key: x-custom, value: redirected}}], request_headers_to_add: [{header: {key: x-cr, value: "yes"}}]`) + `},
			{predicate: ` + statusIs(404) + `, on_match: ` + redirectPolicy(`redirect_action: {host_redirect: errors.local, path_redirect: /errors/404.html},
				response_headers_to_add: [{header: {key: x-custom, value: redirected}}]`) + `},
			{predicate: ` + statusIs(502) + `, on_match: ` + redirectPolicy(`uri: "http://errors.local/unrouted"`) + `}]}}}`
		s := Start(newDir(), proxySpec{
			Port:    port,
			HCM:     `{stat_prefix: crr}`,
			Filters: "[" + httpFilter("envoy.filters.http.custom_response", customResponseType, matcher) + "]",
			Routes: `[{match: {prefix: /errors/}, route: {cluster: pages}},
				{match: {prefix: /app2/}, route: {cluster: app2}},
				{match: {prefix: /app/}, route: {cluster: app1}},
				{match: {prefix: /dead/}, route: {cluster: dead}}]`,
			Clusters: []proxyCluster{{Name: "app1", Port: portNum(app1)}, {Name: "pages", Port: portNum(pages)},
				{Name: "app2", Port: portNum(app2), Extra: httpProtocolOptions(`{explicit_http_config: {http2_protocol_options: {}}}`)},
				{Name: "dead", Port: freePort()}},
		}.YAML())
		h2c := new(http.Protocols)
		h2c.SetUnencryptedHTTP2(true)
		h2Client := &http.Client{Transport: &http.Transport{Protocols: h2c}}

		By("an HTTP/1 upstream's 503, over HTTP/1 and HTTP/2, then its HTTP/2 upstream's")
		for _, c := range []struct {
			client *http.Client
			path   string
		}{{http.DefaultClient, "/app/fail"}, {h2Client, "/app/fail"}, {http.DefaultClient, "/app2/fail"}, {h2Client, "/app2/fail"}} {
			r := httpDo(c.client, http.MethodGet, listenerURL(port, c.path), nil, nil)
			Expect(r.Status).To(Equal(299), c.path)
			Expect(r.Body).To(Equal("<h1>sorry</h1>"))
			Expect(r.Header.Get("x-custom")).To(Equal("redirected"))
			Expect(r.Header.Get("x-page")).To(Equal("/errors/503.html"))
			Expect(r.Header.Get("x-app")).To(BeEmpty(), "the dropped response's headers went through")
			var got errorPageSeen
			Expect(seen).To(Receive(&got))
			Expect(got).To(Equal(errorPageSeen{method: "GET", host: "errors.local", path: "/errors/503.html?from=cr", marker: "yes"}))
		}
		// The connection that carried the dropped response still serves.
		Expect(httpDo(http.DefaultClient, http.MethodGet, listenerURL(port, "/app/ok"), nil, nil).Body).To(Equal("app fine"))

		By("a POST, which goes again as a GET without its body")
		r := httpDo(http.DefaultClient, http.MethodPost, listenerURL(port, "/app/fail"), strings.NewReader("the payload"), nil)
		Expect(r.Status).To(Equal(299))
		Expect(r.Body).To(Equal("<h1>sorry</h1>"))
		var got errorPageSeen
		Expect(seen).To(Receive(&got))
		Expect(got).To(Equal(errorPageSeen{method: "GET", host: "errors.local", path: "/errors/503.html?from=cr", marker: "yes"}))

		By("the router's own 503 (nothing listens)")
		r = httpDo(http.DefaultClient, http.MethodGet, listenerURL(port, "/dead/x"), nil, nil)
		Expect(r.Status).To(Equal(299))
		Expect(r.Body).To(Equal("<h1>sorry</h1>"))
		Expect(seen).To(Receive())

		By("redirect_action, whose target fails: its error is relayed as it is")
		r = httpDo(http.DefaultClient, http.MethodGet, listenerURL(port, "/app/gone?q=1"), nil, nil)
		Expect(r.Status).To(Equal(500))
		Expect(r.Body).To(Equal("error page failed"))
		Expect(r.Header.Get("x-custom")).To(BeEmpty(), "an error response was touched up")
		Expect(seen).To(Receive(&got))
		Expect(got.path).To(Equal("/errors/404.html?q=1"), "path_redirect keeps the request's query")
		Expect(got.host).To(Equal("errors.local"))

		By("a target no route takes: the original response goes on")
		r = httpDo(http.DefaultClient, http.MethodGet, listenerURL(port, "/app/bad"), nil, nil)
		Expect(r.Status).To(Equal(502))
		Expect(r.Body).To(Equal("app bad gateway"))
		Expect(r.Header.Get("x-app")).To(Equal("yes"))
		Expect(seen).NotTo(Receive())
		Expect(httpStat(s, "http.crr.custom_response_redirect_no_route")).To(Equal("1"))
	})

	It("refuses what Envoy refuses, and what it has no extension for, with its path", func() {
		cfg := func(fields string) string {
			return proxySpec{
				Port: freePort(),
				Filters: "[" + httpFilter("envoy.filters.http.custom_response", customResponseType,
					`{custom_response_matcher: {on_no_match: `+redirectPolicy(fields)+`}}`) + "]",
				Clusters: []proxyCluster{{Name: "up", Port: freePort()}},
			}.YAML()
		}
		const at = "http_filters[0].typed_config.custom_response_matcher.on_no_match.action.typed_config."
		for fields, want := range map[string]string{
			`uri: "/relative"`:                                           at + `uri: "/relative" is not an absolute http or https URL`,
			`redirect_action: {prefix_rewrite: /x}`:                      at + "redirect_action.prefix_rewrite: not supported for a custom response",
			`redirect_action: {strip_query: true}`:                       at + "redirect_action.host_redirect: at least one of host_redirect and path_redirect is required",
			`redirect_action: {path_redirect: "/p#frag"}`:                at + "redirect_action.path_redirect: #fragment is not supported",
			`redirect_action: {path_redirect: /p, response_code: FOUND}`: at + "redirect_action.response_code: not used by a custom response",
			`uri: "http://a/b", modify_request_headers_action: {name: m, typed_config: {"@type": type.googleapis.com/google.protobuf.Empty}}`: at + "modify_request_headers_action: not supported by Outrigger: Envoy has no extension of this kind",
		} {
			r, _ := validate("b.yaml", cfg(fields))
			Expect(r.ExitCode).To(Equal(1), fields)
			Expect(r.Stderr).To(ContainSubstring(want), fields)
		}
	})
})
