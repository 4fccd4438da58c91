package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// echoHeadersUpstream is an upstream that answers with the request's
// headers as a JSON object (first value of each) and a server header.
func echoHeadersUpstream() string {
	GinkgoHelper()
	return httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen := map[string]string{}
		for k, v := range r.Header {
			seen[http.CanonicalHeaderKey(k)] = v[0]
		}
		seen[":path"] = r.RequestURI
		w.Header().Set("x-upstream-secret", "s")
		_ = json.NewEncoder(w).Encode(seen)
	}), false)
}

// tailSeen decodes the echoHeadersUpstream answer.
func tailSeen(r Response) map[string]string {
	GinkgoHelper()
	var seen map[string]string
	Expect(json.Unmarshal([]byte(r.Body), &seen)).To(Succeed(), r.Body)
	return seen
}

const headerMutationType = "type.googleapis.com/envoy.extensions.filters.http.header_mutation.v3.HeaderMutation"

// headerMutationSpec is a listener on port with the header mutation
// filter (its own mutations) in front of up; the /route routes carry a
// HeaderMutationPerRoute, and the virtual host one of its own.
func headerMutationSpec(port int, up, own string) string {
	GinkgoHelper()
	perRoute := func(level string) string {
		return `{envoy.filters.http.header_mutation: ` + withType(
			"type.googleapis.com/envoy.extensions.filters.http.header_mutation.v3.HeaderMutationPerRoute",
			`{mutations: {request_mutations: [{append: {header: {key: x-level, value: `+level+`}, append_action: OVERWRITE_IF_EXISTS_OR_ADD}}],
			  response_mutations: [{append: {header: {key: x-resp-level, value: `+level+`}}}]}}`) + `}`
	}
	return proxySpec{
		Port:        port,
		HCM:         "{stat_prefix: web}",
		VirtualHost: `{typed_per_filter_config: ` + perRoute("vhost") + `}`,
		Routes: `[{match: {prefix: /route}, route: {cluster: up}, typed_per_filter_config: ` + perRoute("route") + `},
			{match: {prefix: /}, route: {cluster: up}}]`,
		Filters:  "[" + httpFilter("envoy.filters.http.header_mutation", headerMutationType, own) + "]",
		Clusters: []proxyCluster{{Name: "up", Port: portNum(echoHeadersUpstream())}},
	}.YAML()
}

var _ = Describe("The header mutation filter", func() {
	plain := &http.Client{Timeout: 5 * time.Second}

	It("edits request and response headers in order, then applies the per-route mutations", func() {
		port := freePort()
		Start(newDir(), headerMutationSpec(port, "", `{mutations: {
			request_mutations: [{remove: x-secret}, {append: {header: {key: x-added, value: one}}}, {append: {header: {key: x-level, value: filter}}}],
			response_mutations: [{remove: x-upstream-secret}, {append: {header: {key: x-resp-added, value: "yes"}}}]}}`))
		h := http.Header{"X-Secret": {"s"}}
		r := httpDo(plain, "GET", listenerURL(port, "/route/a"), nil, h)
		Expect(r.Status).To(Equal(200))
		seen := tailSeen(r)
		Expect(seen).NotTo(HaveKey("X-Secret"))
		Expect(seen).To(HaveKeyWithValue("X-Added", "one"))
		// Envoy's default order runs the most specific first: the virtual
		// host's mutation overwrites the route's.
		Expect(seen).To(HaveKeyWithValue("X-Level", "vhost"))
		Expect(r.Header).NotTo(HaveKey("X-Upstream-Secret"))
		Expect(r.Header.Get("X-Resp-Added")).To(Equal("yes"))
		Expect(r.Header.Values("X-Resp-Level")).To(ConsistOf("route", "vhost"))

		r = httpDo(plain, "GET", listenerURL(port, "/other"), nil, nil)
		Expect(tailSeen(r)).To(HaveKeyWithValue("X-Level", "vhost"))
	})

	It("lets the most specific per-route mutation win when asked", func() {
		port := freePort()
		Start(newDir(), headerMutationSpec(port, "", `{most_specific_header_mutations_wins: true}`))
		r := httpDo(plain, "GET", listenerURL(port, "/route/a"), nil, nil)
		Expect(tailSeen(r)).To(HaveKeyWithValue("X-Level", "route"))
	})

	It("renders % operators in values, removes headers by name match and edits the query string", func() {
		port := freePort()
		Start(newDir(), headerMutationSpec(port, "", `{mutations: {
			request_mutations: [
				{append: {header: {key: x-client, value: "%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%"}}},
				{append: {header: {key: x-copy, value: "was-%REQ(x-orig)%"}}},
				{remove_on_match: {key_matcher: {prefix: x-debug-}}}],
			query_parameter_mutations: [
				{remove: token},
				{append: {record: {key: from, value: "%REQ(x-orig)%"}, action: OVERWRITE_IF_EXISTS_OR_ADD}}],
			response_mutations: [
				{append: {header: {key: x-status-seen, value: "%RESPONSE_CODE% %REQ(:PATH)%"}}},
				{remove_on_match: {key_matcher: {exact: x-upstream-secret}}}]}}`))
		h := http.Header{"X-Orig": {"a b"}, "X-Debug-One": {"1"}, "X-Debug-Two": {"2"}}
		r := httpDo(plain, "GET", listenerURL(port, "/other?z=9&token=s3cret&from=old"), nil, h)
		Expect(r.Status).To(Equal(200))
		seen := tailSeen(r)
		Expect(seen).To(HaveKeyWithValue("X-Client", "127.0.0.1"))
		Expect(seen).To(HaveKeyWithValue("X-Copy", "was-a b"))
		Expect(seen).NotTo(HaveKey("X-Debug-One"))
		Expect(seen).NotTo(HaveKey("X-Debug-Two"))
		// Sorted by name, the added value encoded, the rest as sent.
		Expect(seen).To(HaveKeyWithValue(":path", "/other?from=a%20b&z=9"))
		Expect(r.Header).NotTo(HaveKey("X-Upstream-Secret"))
		Expect(r.Header.Get("X-Status-Seen")).To(Equal("200 /other?from=a%20b&z=9"))
	})

	It("edits the trailers of messages that have some, keeping the request's length", func() {
		up := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			w.Header().Set("Trailer", "X-Resp-T, X-Internal-Z")
			w.Header().Set("X-Seen-Length", strconv.FormatInt(r.ContentLength, 10))
			w.WriteHeader(http.StatusOK)
			fmt.Fprintf(w, "%s req-t=%s added-t=%s", body, r.Trailer.Get("X-Req-T"), r.Trailer.Get("X-Added-T"))
			w.Header().Set("X-Resp-T", "r1")
			w.Header().Set("X-Internal-Z", "z")
		}), true)
		port := freePort()
		Start(newDir(), proxySpec{
			Port: port, HCM: "{stat_prefix: web}",
			Filters: "[" + httpFilter("envoy.filters.http.header_mutation", headerMutationType, `{mutations: {
				request_trailers_mutations: [{append: {header: {key: x-added-t, value: "from-%REQ(x-who)%"}}}],
				response_trailers_mutations: [{remove_on_match: {key_matcher: {prefix: x-internal-}}},
					{append: {header: {key: x-resp-t, value: r2}, append_action: OVERWRITE_IF_EXISTS_OR_ADD}}]}}`) + "]",
			Clusters: []proxyCluster{{Name: "up", Port: portNum(up), Extra: h2cOptions()}},
		}.YAML())
		client := httpClients()["HTTP/2"]
		req, err := http.NewRequest("POST", listenerURL(port, "/"), strings.NewReader("hello"))
		Expect(err).NotTo(HaveOccurred())
		req.ContentLength = 5
		req.Header.Set("X-Who", "me")
		// X-Added-T is declared without a value: Go's server hands its
		// handler only the trailers the head declared.
		req.Trailer = http.Header{"X-Req-T": {"v2"}, "X-Added-T": nil}
		resp, err := client.Do(req)
		Expect(err).NotTo(HaveOccurred())
		body, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Body.Close()).To(Succeed())
		Expect(resp.StatusCode).To(Equal(200), string(body))
		Expect(string(body)).To(Equal("hello req-t=v2 added-t=from-me"))
		// The body went through untouched, so it kept its length.
		Expect(resp.Header.Get("X-Seen-Length")).To(Equal("5"))
		Expect(resp.Trailer.Get("X-Resp-T")).To(Equal("r2"))
		Expect(resp.Trailer).NotTo(HaveKey("X-Internal-Z"))

		// A request without trailers gets none.
		r := httpDo(client, "POST", listenerURL(port, "/"), strings.NewReader("x"), nil)
		Expect(r.Body).To(Equal("x req-t= added-t="))
	})

	It("renders the operators of the formatters a Mutations lists", func() {
		port := freePort()
		Start(newDir(), headerMutationSpec(port, "", `{mutations: {
			formatters: [{name: envoy.formatter.req_without_query, typed_config: {"@type": type.googleapis.com/envoy.extensions.formatter.req_without_query.v3.ReqWithoutQuery}}],
			request_mutations: [{append: {header: {key: x-path, value: "%REQ_WITHOUT_QUERY(:PATH)%"}}}]}}`))
		r := httpDo(plain, "GET", listenerURL(port, "/other?token=s3cret"), nil, nil)
		Expect(r.Status).To(Equal(200))
		Expect(tailSeen(r)).To(HaveKeyWithValue("X-Path", "/other"))
	})

	It("refuses what it does not implement, with the field path", func() {
		for own, path := range map[string]string{
			`{mutations: {request_mutations: [{append: {header: {key: x, value: "%REQ_WITHOUT_QUERY(:PATH)%"}}}]}}`:      "envoy.formatter.req_without_query",
			`{mutations: {query_parameter_mutations: [{append: {record: {key: a, value: 1}}}]}}`:                         "mutations.query_parameter_mutations[0].append.record.value: only string value",
			`{mutations: {request_mutations: [{append: {header: {key: x, value: "%NOPE%"}}}]}}`:                          "mutations.request_mutations[0].append.header.value",
			`{mutations: {response_trailers_mutations: [{remove: ":status"}]}}`:                                          "mutations.response_trailers_mutations[0].remove",
			`{mutations: {formatters: [{name: x, typed_config: {"@type": type.googleapis.com/google.protobuf.Empty}}]}}`: "mutations.formatters",
		} {
			r, _ := validate("b.yaml", headerMutationSpec(freePort(), "", own))
			Expect(r.ExitCode).To(Equal(1), own)
			Expect(r.Stderr).To(ContainSubstring(path))
		}
	})
})

// tailLogSpec is a listener on port with the filters (a YAML flow
// list of httpFilter entries) in front of an upstream, and a stdout
// access log with the line format.
func tailLogSpec(port int, filters, format string) string {
	GinkgoHelper()
	return proxySpec{
		Port: port,
		HCM: `{stat_prefix: web, access_log: [{name: out, typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog,
			log_format: {text_format_source: {inline_string: "` + format + `\n"}}}}]}`,
		Filters:  filters,
		Clusters: []proxyCluster{{Name: "up", Port: portNum(echoHeadersUpstream())}},
	}.YAML()
}

const setMetadataType = "type.googleapis.com/envoy.extensions.filters.http.set_metadata.v3.Config"

var _ = Describe("The set metadata filter", func() {
	plain := &http.Client{Timeout: 5 * time.Second}

	It("writes dynamic metadata the access log shows, merging only with allow_overwrite", func() {
		port := freePort()
		sc := Start(newDir(), tailLogSpec(port, "["+
			httpFilter("envoy.filters.http.set_metadata", setMetadataType, `{metadata: [
				{metadata_namespace: team.info, value: {owner: payments, tags: [a], deep: {x: "1"}}},
				{metadata_namespace: team.info, value: {owner: ignored}},
				{metadata_namespace: team.info, allow_overwrite: true, value: {tags: [b], deep: {z: "2"}}}]}`)+"]",
			"SM owner=%DYNAMIC_METADATA(team.info:owner)% tags=%DYNAMIC_METADATA(team.info:tags)% deep=%DYNAMIC_METADATA(team.info:deep)%"),
			"--file-flush-interval-msec", "50")
		r := httpDo(plain, "GET", listenerURL(port, "/"), nil, nil)
		Expect(r.Status).To(Equal(200))
		Eventually(sc.Stdout).Should(ContainSubstring(`SM owner=payments tags=["a","b"] deep={"x":"1","z":"2"}` + "\n"))
		Expect(httpStat(sc, "http.web.set_metadata.overwrite_denied")).To(Equal("1"))
	})

	It("refuses a metadata entry with both value and typed_value, with the field path", func() {
		r, _ := validate("b.yaml", tailLogSpec(freePort(), "["+httpFilter("envoy.filters.http.set_metadata", setMetadataType,
			`{metadata: [{metadata_namespace: a, value: {a: b}, typed_value: {"@type": type.googleapis.com/google.protobuf.Empty}}]}`)+"]", "x"))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("typed_value"))
	})
})

const headerToMetadataType = "type.googleapis.com/envoy.extensions.filters.http.header_to_metadata.v3.Config"

var _ = Describe("The header-to-metadata filter", func() {
	plain := &http.Client{Timeout: 5 * time.Second}

	It("turns request and response headers into dynamic metadata, removing them when asked", func() {
		port := freePort()
		sc := Start(newDir(), tailLogSpec(port, "["+
			httpFilter("envoy.filters.http.header_to_metadata", headerToMetadataType, `{
				request_rules: [
				  {header: x-version, remove: true, on_header_present: {metadata_namespace: lb, key: version},
				   on_header_missing: {metadata_namespace: lb, key: version, value: stable}},
				  {header: x-tenant-path, on_header_present: {metadata_namespace: lb, key: tenant,
				   regex_value_rewrite: {pattern: {regex: "^/([a-z]+)/.*$"}, substitution: "\\1"}}},
				  {header: x-weight, on_header_present: {metadata_namespace: lb, key: weight, type: NUMBER}}],
				response_rules: [{header: x-upstream-secret, remove: true, on_header_present: {metadata_namespace: resp, key: secret}}]}`)+"]",
			"HM version=%DYNAMIC_METADATA(lb:version)% tenant=%DYNAMIC_METADATA(lb:tenant)% weight=%DYNAMIC_METADATA(lb:weight)% secret=%DYNAMIC_METADATA(resp:secret)%"),
			"--file-flush-interval-msec", "50")
		r := httpDo(plain, "GET", listenerURL(port, "/"), nil, http.Header{"X-Version": {"v2"}, "X-Tenant-Path": {"/acme/orders"}, "X-Weight": {"7"}})
		Expect(r.Status).To(Equal(200))
		Expect(tailSeen(r)).NotTo(HaveKey("X-Version"), "the rule removes the header before the upstream")
		Expect(tailSeen(r)).To(HaveKeyWithValue("X-Tenant-Path", "/acme/orders"))
		Expect(r.Header).NotTo(HaveKey("X-Upstream-Secret"))
		Eventually(sc.Stdout).Should(ContainSubstring("HM version=v2 tenant=acme weight=7 secret=s\n"))

		r = httpDo(plain, "GET", listenerURL(port, "/"), nil, nil)
		Expect(r.Status).To(Equal(200))
		Eventually(sc.Stdout).Should(ContainSubstring("HM version=stable tenant=- weight=- secret=s\n"))
	})

	It("reads request cookies, from every cookie header, and refuses them on responses with the field path", func() {
		port := freePort()
		sc := Start(newDir(), tailLogSpec(port, "["+
			httpFilter("envoy.filters.http.header_to_metadata", headerToMetadataType, `{
				request_rules: [
				  {cookie: session, on_header_present: {metadata_namespace: lb, key: session}},
				  {cookie: tier, on_header_present: {metadata_namespace: lb, key: tier}, on_header_missing: {metadata_namespace: lb, key: tier, value: free}}]}`)+"]",
			"CK session=%DYNAMIC_METADATA(lb:session)% tier=%DYNAMIC_METADATA(lb:tier)%"),
			"--file-flush-interval-msec", "50")
		// HTTP/2 sends each cookie pair as a field of its own (RFC 9113
		// §8.2.3): the rule finds the cookie in any of them.
		for proto, client := range httpClients() {
			r := httpDo(client, "GET", listenerURL(port, "/"), nil, http.Header{"Cookie": {"a=1", `session="abc"`, "tier=gold"}})
			Expect(r.Status).To(Equal(200), proto)
			Expect(tailSeen(r)).To(HaveKey("Cookie"), "%s: cookie rules never remove the header", proto)
			Eventually(sc.Stdout).Should(ContainSubstring("CK session=abc tier=gold\n"), proto)
		}
		r := httpDo(plain, "GET", listenerURL(port, "/"), nil, http.Header{"Cookie": {"tier="}})
		Expect(r.Status).To(Equal(200))
		Eventually(sc.Stdout).Should(ContainSubstring("CK session=- tier=free\n"), "an empty cookie is missing")

		res, _ := validate("b.yaml", tailLogSpec(freePort(), "["+httpFilter("envoy.filters.http.header_to_metadata", headerToMetadataType,
			`{response_rules: [{cookie: session, on_header_present: {key: s}}]}`)+"]", "x"))
		Expect(res.ExitCode).To(Equal(1))
		Expect(res.Stderr).To(ContainSubstring("response_rules[0].cookie: not supported by Outrigger on response rules"))
	})
})

var _ = Describe("The buffer filter", func() {
	plain := &http.Client{Timeout: 5 * time.Second}

	It("forwards bodies within max_request_bytes, answers 413 past it, and follows BufferPerRoute", func() {
		port := freePort()
		perRoute := func(fields string) string {
			return `{envoy.filters.http.buffer: ` + withType("type.googleapis.com/envoy.extensions.filters.http.buffer.v3.BufferPerRoute", fields) + `}`
		}
		var got atomic.Int64
		up := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			got.Store(int64(len(b)))
			_, _ = io.WriteString(w, "ok")
		}), false)
		Start(newDir(), proxySpec{
			Port: port,
			HCM:  "{stat_prefix: web}",
			Routes: `[{match: {prefix: /off}, route: {cluster: up}, typed_per_filter_config: ` + perRoute(`{disabled: true}`) + `},
				{match: {prefix: /big}, route: {cluster: up}, typed_per_filter_config: ` + perRoute(`{buffer: {max_request_bytes: 100000}}`) + `},
				{match: {prefix: /}, route: {cluster: up}}]`,
			Filters:  "[" + httpFilter("envoy.filters.http.buffer", "type.googleapis.com/envoy.extensions.filters.http.buffer.v3.Buffer", `{max_request_bytes: 1024}`) + "]",
			Clusters: []proxyCluster{{Name: "up", Port: portNum(up)}},
		}.YAML())
		post := func(path string, n int) Response {
			GinkgoHelper()
			return httpDo(plain, "POST", listenerURL(port, path), strings.NewReader(strings.Repeat("x", n)), nil)
		}
		r := post("/", 1000)
		Expect(r.Status).To(Equal(200))
		Expect(got.Load()).To(Equal(int64(1000)))

		r = post("/", 5000)
		Expect(r.Status).To(Equal(413))
		Expect(r.Body).To(Equal("Payload Too Large"))

		got.Store(0)
		Expect(post("/off", 5000).Status).To(Equal(200))
		Expect(got.Load()).To(Equal(int64(5000)))
		Expect(post("/big", 50000).Status).To(Equal(200))
		Expect(got.Load()).To(Equal(int64(50000)))
	})

	It("refuses a Buffer without max_request_bytes, with the field path", func() {
		r, _ := validate("b.yaml", tailLogSpec(freePort(), "["+httpFilter("envoy.filters.http.buffer",
			"type.googleapis.com/envoy.extensions.filters.http.buffer.v3.Buffer", `{}`)+"]", "x"))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("http_filters[0].typed_config.max_request_bytes: value is required"))
	})
})

var _ = Describe("The CSRF filter", func() {
	plain := &http.Client{Timeout: 5 * time.Second}

	It("answers 403 Invalid origin to state-changing requests from other origins, counts, and follows the route's policy", func() {
		port := freePort()
		shadow := `{envoy.filters.http.csrf: ` + withType("type.googleapis.com/envoy.extensions.filters.http.csrf.v3.CsrfPolicy",
			`{filter_enabled: {default_value: {numerator: 0}}, shadow_enabled: {default_value: {numerator: 100}}}`) + `}`
		sc := Start(newDir(), proxySpec{
			Port:   port,
			HCM:    "{stat_prefix: web}",
			Routes: `[{match: {prefix: /shadow}, route: {cluster: up}, typed_per_filter_config: ` + shadow + `}, {match: {prefix: /}, route: {cluster: up}}]`,
			Filters: "[" + httpFilter("envoy.filters.http.csrf", "type.googleapis.com/envoy.extensions.filters.http.csrf.v3.CsrfPolicy",
				`{filter_enabled: {default_value: {numerator: 100}}, additional_origins: [{exact: partner.example}]}`) + "]",
			Clusters: []proxyCluster{{Name: "up", Port: portNum(echoHeadersUpstream())}},
		}.YAML())
		self := "127.0.0.1:" + strconv.Itoa(port)
		post := func(path string, header ...string) Response {
			GinkgoHelper()
			h := http.Header{}
			for i := 0; i+1 < len(header); i += 2 {
				h.Set(header[i], header[i+1])
			}
			return httpDo(plain, "POST", listenerURL(port, path), strings.NewReader("x"), h)
		}
		Expect(post("/", "Origin", "http://"+self).Status).To(Equal(200))
		Expect(post("/", "Referer", "http://"+self+"/form").Status).To(Equal(200))
		Expect(post("/", "Origin", "https://partner.example").Status).To(Equal(200))
		r := post("/", "Origin", "https://evil.example")
		Expect(r.Status).To(Equal(403))
		Expect(r.Body).To(Equal("Invalid origin"))
		Expect(post("/").Status).To(Equal(403))
		Expect(httpDo(plain, "GET", listenerURL(port, "/"), nil, http.Header{"Origin": {"https://evil.example"}}).Status).To(Equal(200))
		Expect(post("/shadow", "Origin", "https://evil.example").Status).To(Equal(200), "shadow mode only counts")

		Expect(httpStat(sc, "http.web.csrf.request_valid")).To(Equal("3"))
		Expect(httpStat(sc, "http.web.csrf.request_invalid")).To(Equal("3"))
		Expect(httpStat(sc, "http.web.csrf.missing_source_origin")).To(Equal("1"))
	})
})

var _ = Describe("The echo and direct_response network filters", func() {
	dial := func(port int) net.Conn {
		GinkgoHelper()
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 5*time.Second)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(c.Close)
		Expect(c.SetDeadline(time.Now().Add(10 * time.Second))).To(Succeed())
		return c
	}

	It("echoes what the client sends until it closes", func() {
		port := freePort()
		Start(newDir(), limitsBootstrap(port, []string{`{name: envoy.filters.network.echo, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.echo.v3.Echo}}`}))
		c := dial(port)
		expectEcho(c)
		big := strings.Repeat("0123456789", 20000)
		go func() { _, _ = c.Write([]byte(big)) }()
		b := make([]byte, len(big))
		_, err := io.ReadFull(c, b)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(b)).To(Equal(big))
		Expect(c.(*net.TCPConn).CloseWrite()).To(Succeed())
		rest, err := io.ReadAll(c)
		Expect(err).NotTo(HaveOccurred(), "the filter closes once the client is done")
		Expect(rest).To(BeEmpty())
	})

	It("writes the configured response to each connection, then closes it", func() {
		dir := newDir()
		file := filepath.Join(dir, "banner.txt")
		Expect(os.WriteFile(file, []byte("from a file\n"), 0o600)).To(Succeed())
		inline, fromFile := freePort(), freePort()
		Start(dir, limitsBootstrap(inline, []string{`{name: envoy.filters.network.direct_response, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.direct_response.v3.Config, response: {inline_string: "hello\n"}}}`}))
		Start(newDir(), limitsBootstrap(fromFile, []string{`{name: envoy.filters.network.direct_response, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.direct_response.v3.Config, response: {filename: ` + file + `}}}`}))
		for port, want := range map[int]string{inline: "hello\n", fromFile: "from a file\n"} {
			got, err := io.ReadAll(dial(port))
			Expect(err).NotTo(HaveOccurred())
			Expect(string(got)).To(Equal(want))
		}
	})

	It("refuses a response file that cannot be read, with the field path", func() {
		r, _ := validate("b.yaml", limitsBootstrap(freePort(), []string{`{name: envoy.filters.network.direct_response, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.direct_response.v3.Config, response: {filename: /nonexistent/banner}}}`}))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("typed_config.response.filename: "))
	})
})
