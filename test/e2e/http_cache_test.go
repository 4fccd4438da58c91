package e2e

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

const (
	cacheConfigType = "type.googleapis.com/envoy.extensions.filters.http.cache.v3.CacheConfig"
	simpleCacheType = "type.googleapis.com/envoy.extensions.http.cache.simple_http_cache.v3.SimpleHttpCacheConfig"
)

// cacheOrigin is an upstream that counts the requests it gets per path
// (query included) and answers as the query says: cc is its Cache-Control,
// etag its ETag (a request with a matching If-None-Match gets a 304), lm
// its Last-Modified, vary its Vary, size the length of its body. The body
// names the request number, so that a stored body is told from a new one.
type cacheOrigin struct {
	mu     sync.Mutex
	counts map[string]int
	// conditional records the conditional headers of each request.
	conditional []string
}

func (o *cacheOrigin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	o.mu.Lock()
	o.counts[r.URL.RequestURI()]++
	n := o.counts[r.URL.RequestURI()]
	o.conditional = append(o.conditional, "inm="+r.Header.Get("If-None-Match")+" ims="+r.Header.Get("If-Modified-Since"))
	o.mu.Unlock()
	h := w.Header()
	if v := q.Get("cc"); v != "" {
		h.Set("Cache-Control", v)
	}
	if v := q.Get("vary"); v != "" {
		h.Set("Vary", v)
	}
	if v := q.Get("lm"); v != "" {
		h.Set("Last-Modified", v)
	}
	h.Set("X-Origin-Count", strconv.Itoa(n))
	if v := q.Get("etag"); v != "" {
		h.Set("ETag", v)
		if r.Header.Get("If-None-Match") == v {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	body := "response " + strconv.Itoa(n) + " lang=" + r.Header.Get("Accept-Language")
	if size, _ := strconv.Atoi(q.Get("size")); size > 0 {
		body = strings.Repeat("x", size)
	}
	h.Set("Content-Type", "text/plain; charset=origin")
	_, _ = w.Write([]byte(body))
}

// count is how many requests the origin got for uri.
func (o *cacheOrigin) count(uri string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.counts[uri]
}

// lastConditional is the conditional headers of the last request.
func (o *cacheOrigin) lastConditional() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.conditional[len(o.conditional)-1]
}

var _ = Describe("The cache filter with the simple cache", func() {
	var (
		origin *cacheOrigin
		port   int
		sc     *Sidecar
	)
	get := func(method, uri string, header http.Header) Response {
		GinkgoHelper()
		return httpDo(&http.Client{Timeout: 10 * time.Second}, method, listenerURL(port, uri), nil, header)
	}
	BeforeEach(func() {
		origin = &cacheOrigin{counts: map[string]int{}}
		up := httpTestUpstream(origin, false)
		port = freePort()
		sc = Start(newDir(), proxySpec{
			Port: port,
			HCM:  `{access_log: [` + stdoutLog("CACHELOG %REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS%\n") + `]}`,
			Filters: "[" + httpFilter("envoy.filters.http.cache", cacheConfigType,
				`{typed_config: {"@type": `+simpleCacheType+`}, max_body_bytes: 1000,
				  allowed_vary_headers: [{exact: accept-language}],
				  key_creator_params: {query_parameters_excluded: [{name: utm}]}}`) + "]",
			Clusters: []proxyCluster{{Name: "up", Port: portNum(up)}},
		}.YAML(), "--file-flush-interval-msec", "50")
	})

	It("serves a fresh response from the cache with an Age, and stores neither no-store nor private ones", func() {
		const uri = "/fresh?cc=max-age%3D600"
		r := get("GET", uri, nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal("response 1 lang="))
		Expect(r.Header.Get("Age")).To(BeEmpty())
		Expect(r.Header.Get("Content-Length")).To(Equal("16"), "the stored response kept its length on the way")
		r = get("GET", uri, nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal("response 1 lang="))
		Expect(r.Header.Get("Age")).To(MatchRegexp(`^[0-9]+$`))
		Expect(r.Header.Get("Content-Type")).To(Equal("text/plain; charset=origin"))
		Expect(r.Header.Get("Cache-Control")).To(Equal("max-age=600"))
		Expect(r.Header.Get("Content-Length")).To(Equal(strconv.Itoa(len("response 1 lang="))))
		Expect(origin.count(uri)).To(Equal(1), "the second GET reached the origin")
		Eventually(sc.Stdout).Should(ContainSubstring("CACHELOG " + uri + " 200 RFCF cache.response_from_cache_filter\n"))

		By("serving it over HTTP/2 too")
		h2c := new(http.Protocols)
		h2c.SetUnencryptedHTTP2(true)
		h2 := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Protocols: h2c}}
		r = httpDo(h2, "GET", listenerURL(port, uri), nil, nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal("response 1 lang="))
		Expect(r.Header.Get("Age")).NotTo(BeEmpty())
		const h2URI = "/h2?cc=max-age%3D600"
		Expect(httpDo(h2, "GET", listenerURL(port, h2URI), nil, nil).Header.Get("Content-Length")).To(Equal("16"))
		Expect(httpDo(h2, "GET", listenerURL(port, h2URI), nil, nil).Body).To(Equal("response 1 lang="))
		Expect(origin.count(h2URI)).To(Equal(1))
		Expect(origin.count(uri)).To(Equal(1))

		By("answering a HEAD from the stored GET response")
		r = get("HEAD", uri, nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(BeEmpty())
		Expect(r.Header.Get("Age")).NotTo(BeEmpty())
		Expect(origin.count(uri)).To(Equal(1))

		By("answering a single byte range from the stored response")
		r = get("GET", uri, http.Header{"Range": {"bytes=0-7"}})
		Expect(r.Status).To(Equal(206))
		Expect(r.Body).To(Equal("response"))
		Expect(r.Header.Get("Content-Range")).To(Equal("bytes 0-7/16"))
		r = get("GET", uri, http.Header{"Range": {"bytes=100-"}})
		Expect(r.Status).To(Equal(416))
		Expect(r.Header.Get("Content-Range")).To(Equal("bytes */16"))
		Expect(origin.count(uri)).To(Equal(1))

		By("storing nothing for no-store, private, or without freshness information")
		for _, u := range []string{"/nostore?cc=no-store", "/private?cc=private%2C+max-age%3D600", "/plain"} {
			get("GET", u, nil)
			r = get("GET", u, nil)
			Expect(r.Body).To(Equal("response 2 lang="), u)
			Expect(r.Header.Get("Age")).To(BeEmpty(), u)
			Expect(origin.count(u)).To(Equal(2), u)
		}

		By("leaving a request with Authorization, or with its own If-None-Match, to the origin")
		get("GET", uri, http.Header{"Authorization": {"Bearer x"}})
		Expect(origin.count(uri)).To(Equal(2))
		get("GET", uri, http.Header{"If-None-Match": {`"a"`}})
		Expect(origin.count(uri)).To(Equal(3))
		r = get("GET", uri, nil)
		Expect(r.Body).To(Equal("response 1 lang="), "the stored response is still served")
		Expect(origin.count(uri)).To(Equal(3))

		By("not storing a HEAD response")
		const headURI = "/head?cc=max-age%3D600"
		get("HEAD", headURI, nil)
		get("GET", headURI, nil)
		Expect(origin.count(headURI)).To(Equal(2))
	})

	It("validates stale responses with the origin, and a 304 serves the stored body", func() {
		By("validating a no-cache response with its ETag on every use")
		const uri = `/etag?cc=no-cache&etag=%22v1%22`
		Expect(get("GET", uri, nil).Body).To(Equal("response 1 lang="))
		r := get("GET", uri, nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal("response 1 lang="), "the stored body")
		Expect(r.Header.Get("X-Origin-Count")).To(Equal("2"), "the 304's headers win")
		Expect(r.Header.Get("Age")).To(BeEmpty(), "a validated response has no Age")
		Expect(r.Header.Get("Content-Type")).To(Equal("text/plain; charset=origin"))
		Expect(origin.count(uri)).To(Equal(2))
		Expect(origin.lastConditional()).To(HavePrefix(`inm="v1" ims=`))
		Eventually(sc.Stdout).Should(ContainSubstring("CACHELOG " + uri + " 200 RFCF cache.response_from_cache_filter\n"))

		By("validating a response whose max-age ran out, with If-Modified-Since from Last-Modified")
		const lm = "Tue, 15 Nov 1994 12:45:26 GMT"
		stale := "/stale?cc=max-age%3D1&lm=" + strings.ReplaceAll(lm, " ", "+")
		Expect(get("GET", stale, nil).Body).To(Equal("response 1 lang="))
		// Ages are whole seconds, counted from when the response was
		// stored: after two, the response is stale whatever the load.
		time.Sleep(2100 * time.Millisecond)
		r = get("GET", stale, nil)
		Expect(origin.count(stale)).To(Equal(2))
		Expect(origin.lastConditional()).To(Equal("inm= ims=" + lm))
		Expect(r.Body).To(Equal("response 2 lang="), "the origin answered 200: the new response")

		By("forcing a validation with the request's no-cache")
		const fresh = `/forced?cc=max-age%3D600&etag=%22f%22`
		get("GET", fresh, nil)
		Expect(get("GET", fresh, nil).Header.Get("Age")).NotTo(BeEmpty())
		Expect(origin.count(fresh)).To(Equal(1))
		r = get("GET", fresh, http.Header{"Cache-Control": {"no-cache"}})
		Expect(origin.count(fresh)).To(Equal(2))
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal("response 1 lang="))
		r = get("GET", fresh, http.Header{"Pragma": {"no-cache"}})
		Expect(origin.count(fresh)).To(Equal(3))
		Expect(r.Body).To(Equal("response 1 lang="))
	})

	It("keys responses by the allowed Vary headers and key_creator_params, stores none that vary on others, and none past max_body_bytes", func() {
		const uri = "/vary?cc=max-age%3D600&vary=Accept-Language"
		en := http.Header{"Accept-Language": {"en"}}
		fr := http.Header{"Accept-Language": {"fr"}}
		Expect(get("GET", uri, en).Body).To(Equal("response 1 lang=en"))
		Expect(get("GET", uri, fr).Body).To(Equal("response 2 lang=fr"))
		Expect(get("GET", uri, en).Body).To(Equal("response 1 lang=en"))
		Expect(get("GET", uri, fr).Body).To(Equal("response 2 lang=fr"))
		Expect(origin.count(uri)).To(Equal(2))

		const other = "/vary-other?cc=max-age%3D600&vary=User-Agent"
		get("GET", other, nil)
		get("GET", other, nil)
		Expect(origin.count(other)).To(Equal(2))

		By("leaving the query parameters key_creator_params excludes out of the key")
		const tagged = "/key?cc=max-age%3D600&utm=a"
		Expect(get("GET", tagged, nil).Body).To(Equal("response 1 lang="))
		Expect(get("GET", "/key?cc=max-age%3D600&utm=b", nil).Body).To(Equal("response 1 lang="))
		Expect(origin.count("/key?cc=max-age%3D600&utm=b")).To(Equal(0))
		Expect(get("GET", "/key?cc=max-age%3D600&x=1", nil).Body).To(Equal("response 1 lang="), "another parameter is another key")
		Expect(origin.count("/key?cc=max-age%3D600&x=1")).To(Equal(1))

		By("storing no body longer than max_body_bytes")
		const big, small = "/big?cc=max-age%3D600&size=1001", "/small?cc=max-age%3D600&size=1000"
		for range 2 {
			Expect(get("GET", big, nil).Body).To(HaveLen(1001))
			Expect(get("GET", small, nil).Body).To(HaveLen(1000))
		}
		Expect(origin.count(big)).To(Equal(2))
		Expect(origin.count(small)).To(Equal(1))
	})
})

var _ = Describe("The cache filter's configuration", func() {
	It("refuses a storage other than the simple cache, and a missing one, with their paths", func() {
		cfg := func(fields string) string {
			return proxySpec{
				Port:     freePort(),
				Filters:  "[" + httpFilter("envoy.filters.http.cache", cacheConfigType, fields) + "]",
				Clusters: []proxyCluster{{Name: "up", Port: freePort()}},
			}.YAML()
		}
		r, _ := validate("b.yaml", cfg(`{typed_config: {"@type": type.googleapis.com/envoy.extensions.http.cache.file_system_http_cache.v3.FileSystemHttpCacheConfig, cache_path: /tmp}}`))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("http_filters[0].typed_config.typed_config"))
		Expect(r.Stderr).To(ContainSubstring("FileSystemHttpCacheConfig"))
		r, _ = validate("b.yaml", cfg(`{}`))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("http_filters[0].typed_config.typed_config: required unless disabled is true"))
		r, _ = validate("b.yaml", cfg(`{disabled: true}`))
		Expect(r.ExitCode).To(Equal(0), r.Stderr)
	})
})
