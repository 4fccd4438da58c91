package e2e

import (
	"io"
	"net/http"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// uriTemplateMatch is a path_match_policy (or RBAC uri_template) with the
// uri_template matcher, as Gateway API implementations write it.
func uriTemplateMatch(tmpl string) string {
	return `{name: envoy.path.match.uri_template.uri_template_matcher, typed_config: {"@type": type.googleapis.com/envoy.extensions.path.match.uri_template.v3.UriTemplateMatchConfig, path_template: "` + tmpl + `"}}`
}

// uriTemplateRewrite is a path_rewrite_policy with the uri_template
// rewriter.
func uriTemplateRewrite(tmpl string) string {
	return `{name: envoy.path.rewrite.uri_template.uri_template_rewriter, typed_config: {"@type": type.googleapis.com/envoy.extensions.path.rewrite.uri_template.v3.UriTemplateRewriteConfig, path_template_rewrite: "` + tmpl + `"}}`
}

func uriTemplateBootstrap(port, echo int, apiRewrite string) string {
	GinkgoHelper()
	return proxySpec{
		Port: port,
		Routes: `[{name: api, match: {path_match_policy: ` + uriTemplateMatch("/api/{version}/users/{rest=**}") + `},
			route: {cluster: echo, path_rewrite_policy: ` + uriTemplateRewrite(apiRewrite) + `}},
			{name: css, match: {path_match_policy: ` + uriTemplateMatch("/static/**.css") + `}, route: {cluster: echo}},
			{name: fallback, match: {prefix: /}, direct_response: {status: 200, body: {inline_string: fallback}}}]`,
		Filters: "[" + httpFilter("envoy.filters.http.rbac", "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC",
			`{rules: {action: DENY, policies: {admin: {permissions: [{uri_template: `+uriTemplateMatch("/admin/**")+`}], principals: [{any: true}]}}}}`) + "]",
		Clusters: []proxyCluster{{Name: "echo", Port: echo}},
	}.YAML()
}

var _ = Describe("URI templates: path_match_policy, path_rewrite_policy and RBAC uri_template", func() {
	It("matches by template, rewrites with the captured variables at the upstream, and denies by template", func() {
		echo := portNum(httpTestUpstream(http.HandlerFunc(httpEcho), false))
		port := freePort()
		Start(newDir(), uriTemplateBootstrap(port, echo, "/{version}/{rest}"))
		get := func(path string) (int, string) {
			GinkgoHelper()
			resp, err := http.Get(listenerURL(port, path))
			Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			Expect(err).NotTo(HaveOccurred())
			return resp.StatusCode, string(b)
		}

		code, body := get("/api/v2/users/7/cart?x=1")
		Expect(code).To(Equal(200))
		Expect(body).To(HavePrefix("GET /v2/7/cart?x=1 HTTP/1.1\n"), "the rewrite, query kept, reaches the upstream")
		Expect(body).To(ContainSubstring("x-envoy-original-path: /api/v2/users/7/cart?x=1\n"))

		// '**' may match nothing, but the '/' before it is the template's.
		_, body = get("/api/v2/users/")
		Expect(body).To(HavePrefix("GET /v2/ HTTP/1.1\n"))
		_, body = get("/api/v2/users")
		Expect(body).To(Equal("fallback"))
		// Templates are case-sensitive, whatever case_sensitive says.
		_, body = get("/API/v2/users/7")
		Expect(body).To(Equal("fallback"))
		// A '*' (here the implicit one of {version}) is one segment.
		_, body = get("/api/v2/x/users/7")
		Expect(body).To(Equal("fallback"))

		_, body = get("/static/css/site.css")
		Expect(body).To(HavePrefix("GET /static/css/site.css HTTP/1.1\n"))
		Expect(body).NotTo(ContainSubstring("x-envoy-original-path"), "no rewrite, no original path")
		_, body = get("/static/site.cssx")
		Expect(body).To(Equal("fallback"))

		code, _ = get("/admin/users/1")
		Expect(code).To(Equal(403))
		code, body = get("/administrator")
		Expect(code).To(Equal(200))
		Expect(body).To(Equal("fallback"))
	})

	It("refuses a rewrite variable the template does not capture, naming its path", func() {
		dir := newDir()
		path := filepath.Join(dir, "bad.yaml")
		writeFile(path, uriTemplateBootstrap(freePort(), freePort(), "/{version}/{id}"))
		res := Run("--mode", "validate", "-c", path)
		Expect(res.ExitCode).To(Equal(1))
		Expect(res.Stderr).To(ContainSubstring("routes[0].route.path_rewrite_policy.typed_config.path_template_rewrite: mismatch between variables in path_match_policy /api/{version}/users/{rest=**} and path_rewrite_policy /{version}/{id}"))
	})
})
