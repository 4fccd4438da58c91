package e2e

import (
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// redirector answers a path holding /r/<code> with that code and a
// Location of its "to" query parameter (after reading the body), with
// x-copy: from-<code> beside it; any other path is echoed: the method,
// path, x-envoy-original-url and x-copy, then the body.
func redirector(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if _, code, ok := strings.Cut(r.URL.Path, "/r/"); ok {
		n, _ := strconv.Atoi(code)
		w.Header().Set("Location", r.URL.Query().Get("to"))
		w.Header().Set("X-Copy", "from-"+code)
		w.WriteHeader(n)
		_, _ = io.WriteString(w, "passed through")
		return
	}
	_, _ = io.WriteString(w, r.Method+" "+r.URL.RequestURI()+" original="+r.Header.Get("x-envoy-original-url")+
		" copy="+r.Header.Get("x-copy")+" body="+string(body))
}

// redirectTo is a /r/<code> path whose Location is target.
func redirectTo(prefix string, code int, target string) string {
	return prefix + "/r/" + strconv.Itoa(code) + "?to=" + url.QueryEscape(target)
}

// internalRedirectRoutes: /r/ follows 302 and 303 (twice at most, each
// route once), copying x-copy; /allow/ follows to the echo route only;
// /legacy/ uses the deprecated internal_redirect_action; the rest is the
// echo route, on another cluster.
const internalRedirectRoutes = `[
 {name: start, match: {prefix: /r/}, route: {cluster: a, internal_redirect_policy: {
   max_internal_redirects: 2, redirect_response_codes: [302, 303], response_headers_to_copy: [x-copy],
   predicates: [{name: envoy.internal_redirect_predicates.previous_routes,
     typed_config: {"@type": type.googleapis.com/envoy.extensions.internal_redirect.previous_routes.v3.PreviousRoutesConfig}}]}}},
 {name: allow, match: {prefix: /allow/}, route: {cluster: a, internal_redirect_policy: {
   max_internal_redirects: 5,
   predicates: [{name: envoy.internal_redirect_predicates.allow_listed_routes,
     typed_config: {"@type": type.googleapis.com/envoy.extensions.internal_redirect.allow_listed_routes.v3.AllowListedRoutesConfig,
       allowed_route_names: [echo]}}]}}},
 {name: legacy, match: {prefix: /legacy/}, route: {cluster: a, internal_redirect_action: HANDLE_INTERNAL_REDIRECT}},
 {name: echo, match: {prefix: /}, route: {cluster: b}}]`

var _ = Describe("Internal redirects", func() {
	for _, h2 := range []bool{false, true} {
		name := "an HTTP/1.1 upstream"
		if h2 {
			name = "an HTTP/2 upstream"
		}
		It("follow "+name+"'s redirects through the routes again, within the policy, and pass the others through", func() {
			addr := httpTestUpstream(http.HandlerFunc(redirector), h2)
			port, dir := freePort(), newDir()
			extra := http2Upstream(h2)
			logPath := filepath.Join(dir, "access.log")
			s := Start(dir, proxySpec{
				Port:     port,
				Routes:   internalRedirectRoutes,
				Listener: `{per_connection_buffer_limit_bytes: 2048}`,
				HCM: `{access_log: [` + fileLog(logPath,
					"%REQ(:PATH)% %RESPONSE_CODE% %ROUTE_NAME% %UPSTREAM_CLUSTER%\n") + `]}`,
				Clusters: []proxyCluster{{Name: "a", Port: portNum(addr), Extra: extra}, {Name: "b", Port: portNum(addr), Extra: extra}},
			}.YAML(), "--file-flush-interval-msec", "20")
			s.WaitLive()
			c := &http.Client{Timeout: 15 * time.Second,
				CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			send := func(method, path, body string, hdr ...string) (int, string, string) {
				GinkgoHelper()
				req, err := http.NewRequest(method, listenerURL(port, path), strings.NewReader(body))
				Expect(err).NotTo(HaveOccurred())
				for i := 0; i+1 < len(hdr); i += 2 {
					req.Header.Set(hdr[i], hdr[i+1])
				}
				resp, err := c.Do(req)
				Expect(err).NotTo(HaveOccurred())
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				Expect(err).NotTo(HaveOccurred())
				return resp.StatusCode, resp.Header.Get("Location"), string(b)
			}
			self := "http://127.0.0.1:" + strconv.Itoa(port)

			By("a 302 goes to another route and cluster, with its body and the response's x-copy")
			p := redirectTo("", 302, "http://other.test/echo/one?x=1")
			status, _, body := send("POST", p, "payload", "x-copy", "from-client")
			Expect(status).To(Equal(200))
			Expect(body).To(Equal("POST /echo/one?x=1 original=" + self + p + " copy=from-302 body=payload"))

			By("a 303 turns a POST into a GET without its body")
			status, _, body = send("POST", redirectTo("", 303, "http://other.test/echo/two"), "payload")
			Expect(status).To(Equal(200))
			Expect(body).To(HavePrefix("GET /echo/two original="))
			Expect(body).To(HaveSuffix(" body="))

			By("a code the policy does not list passes through")
			status, loc, body := send("GET", redirectTo("", 307, "http://other.test/echo/x"), "")
			Expect(status).To(Equal(307))
			Expect(loc).To(Equal("http://other.test/echo/x"))
			Expect(body).To(Equal("passed through"))

			By("a body above the buffer limit is not kept: the redirect passes through")
			status, _, _ = send("POST", redirectTo("", 302, "http://other.test/echo/big"), strings.Repeat("b", 8192))
			Expect(status).To(Equal(302))

			By("an https target of an http request is refused")
			status, _, _ = send("GET", redirectTo("", 302, "https://other.test/echo/tls"), "")
			Expect(status).To(Equal(302))

			By("previous_routes: the start route may be the target once")
			second := "http://other.test" + redirectTo("", 302, "http://other.test/echo/end")
			status, loc, _ = send("GET", redirectTo("", 302, "http://other.test"+redirectTo("", 302, second)), "")
			Expect(status).To(Equal(302))
			Expect(loc).To(Equal(second))

			By("allow_listed_routes: only the echo route is a target")
			status, _, body = send("GET", redirectTo("/allow", 302, "http://other.test/echo/allowed"), "")
			Expect(status).To(Equal(200))
			Expect(body).To(HavePrefix("GET /echo/allowed "))
			status, loc, _ = send("GET", redirectTo("/allow", 302, "http://other.test"+redirectTo("", 302, "http://other.test/echo/no")), "")
			Expect(status).To(Equal(302))
			Expect(loc).To(HavePrefix("http://other.test/r/302"))

			By("the deprecated internal_redirect_action follows one 302: the second passes through")
			status, _, body = send("GET", redirectTo("/legacy", 302, "http://other.test/echo/legacy"), "")
			Expect(status).To(Equal(200))
			Expect(body).To(HavePrefix("GET /echo/legacy "))
			status, loc, _ = send("GET", redirectTo("/legacy", 302, "http://other.test"+redirectTo("/legacy", 302, "http://other.test/echo/z")), "")
			Expect(status).To(Equal(302))
			Expect(loc).To(Equal("http://other.test/echo/z"))

			By("the stats count each outcome")
			for stat, want := range map[string]string{
				"cluster.a.upstream_internal_redirect_succeeded_total":    "6",
				"cluster.a.upstream_internal_redirect_failed_total":       "5",
				"http.l.passthrough_internal_redirect_unsafe_scheme":      "1",
				"http.l.passthrough_internal_redirect_predicate":          "2",
				"http.l.passthrough_internal_redirect_too_many_redirects": "1",
				"http.l.passthrough_internal_redirect_bad_location":       "0",
				"http.l.passthrough_internal_redirect_no_route":           "0",
				"http.l.downstream_rq_total":                              "10",
			} {
				waitStat(s, stat, want)
			}

			By("the access log has one line per client request, with its final response")
			Eventually(func() string { return readFile(logPath) }, 10*time.Second).Should(And(
				ContainSubstring("/echo/one?x=1 200 echo b\n"),
				ContainSubstring("/echo/two 200 echo b\n"),
				ContainSubstring("/r/302?to=http%3A%2F%2Fother.test%2Fecho%2Fbig 302 start a\n"),
			))
			Eventually(func() int { return strings.Count(readFile(logPath), "\n") }, 10*time.Second).Should(Equal(10))
			Consistently(func() int { return strings.Count(readFile(logPath), "\n") }, 200*time.Millisecond).Should(Equal(10))
		})
	}
})
