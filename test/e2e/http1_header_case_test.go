package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// headUpstream is an HTTP/1.1 server that keeps the exact bytes of each
// request head it receives and answers with a fixed head of lower-case
// field names, so that a test sees the names as they travelled.
type headUpstream struct {
	port  int
	mu    sync.Mutex
	heads []string
}

func (u *headUpstream) last() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.heads) == 0 {
		return ""
	}
	return u.heads[len(u.heads)-1]
}

func startHeadUpstream() *headUpstream {
	GinkgoHelper()
	return startHeadUpstreamWith("HTTP/1.1 200 OK\r\ncontent-length: 2\r\nx-upstream-thing: v\r\n\r\nok")
}

// startHeadUpstreamWith is startHeadUpstream answering every request with
// the bytes of response.
func startHeadUpstreamWith(response string) *headUpstream {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = ln.Close() })
	u := &headUpstream{port: ln.Addr().(*net.TCPAddr).Port}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				r := bufio.NewReader(c)
				for {
					var head strings.Builder
					for {
						line, err := r.ReadString('\n')
						if err != nil {
							return
						}
						head.WriteString(line)
						if line == "\r\n" {
							break
						}
					}
					u.mu.Lock()
					u.heads = append(u.heads, head.String())
					u.mu.Unlock()
					if _, err := io.WriteString(c, response); err != nil {
						return
					}
				}
			}()
		}
	}()
	return u
}

// headerCaseBootstrap has two listeners in front of two clusters reaching
// the same upstream: "proper" with proper_case_words on both sides (the
// listener's header_key_format is properFormat, a YAML flow mapping),
// "plain" with Envoy's default lower case.
func headerCaseBootstrap(proper, plain, upPort int, properFormat string) string {
	side := func(name string, port int, hcm, h1 string) proxySpec {
		return proxySpec{
			Port: port, Listener: "{name: " + name + "}", HCM: "{stat_prefix: " + name + hcm + "}",
			Clusters: []proxyCluster{{Name: name, Port: upPort,
				Extra: httpProtocolOptions("{explicit_http_config: {http_protocol_options: {" + h1 + "}}}")}},
		}
	}
	p := side("proper", proper, ", http_protocol_options: {header_key_format: "+properFormat+"}", "header_key_format: {proper_case_words: {}}")
	p.More = []proxySpec{side("plain", plain, "", "")}
	return p.YAML()
}

// rawExchange sends one raw HTTP/1.1 request to port and returns the
// response head exactly as it arrived.
func rawExchange(port int, request string) string {
	GinkgoHelper()
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 5*time.Second)
	Expect(err).NotTo(HaveOccurred())
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = io.WriteString(c, request)
	Expect(err).NotTo(HaveOccurred())
	r := bufio.NewReader(c)
	var head strings.Builder
	for {
		line, err := r.ReadString('\n')
		Expect(err).NotTo(HaveOccurred(), "head so far: %q", head.String())
		head.WriteString(line)
		if line == "\r\n" {
			return head.String()
		}
	}
}

var _ = Describe("HTTP/1.1 header_key_format", func() {
	It("writes field names in proper case to the client and to the upstream with proper_case_words, in lower case otherwise", func() {
		up := startHeadUpstream()
		proper, plain := freePort(), freePort()
		Start(newDir(), headerCaseBootstrap(proper, plain, up.port, "{proper_case_words: {}}"))
		const req = "GET /p HTTP/1.1\r\nhost: example.com\r\nx-my-header: 1\r\nfoo$b#$are: 2\r\ncontent-length: 4\r\n\r\nbody"

		resp := rawExchange(proper, req)
		Expect(resp).To(HavePrefix("HTTP/1.1 200 OK\r\n"))
		Expect(resp).To(ContainSubstring("\r\nContent-Length: 2\r\n"))
		Expect(resp).To(ContainSubstring("\r\nX-Upstream-Thing: v\r\n"))
		Expect(resp).To(MatchRegexp(`\r\nServer: \S+\r\n`))
		Expect(resp).NotTo(MatchRegexp(`\r\n[a-z]`), "every name starts upper case:\n%s", resp)
		head := up.last()
		Expect(head).To(HavePrefix("GET /p HTTP/1.1\r\n"))
		Expect(head).To(ContainSubstring("\r\nHost: example.com\r\n"))
		Expect(head).To(ContainSubstring("\r\nX-My-Header: 1\r\n"))
		Expect(head).To(ContainSubstring("\r\nFoo$B#$Are: 2\r\n"))
		Expect(head).To(ContainSubstring("\r\nContent-Length: 4\r\n"))
		Expect(head).To(MatchRegexp(`\r\nX-Request-Id: \S+\r\n`))
		Expect(head).NotTo(MatchRegexp(`\r\n[a-z]`), "every name starts upper case:\n%s", head)

		resp = rawExchange(plain, req)
		Expect(resp).To(ContainSubstring("\r\ncontent-length: 2\r\n"))
		Expect(resp).To(ContainSubstring("\r\nx-upstream-thing: v\r\n"))
		head = up.last()
		Expect(head).To(ContainSubstring("\r\nhost: example.com\r\n"))
		Expect(head).To(ContainSubstring("\r\nx-my-header: 1\r\n"))
	})

	It("keeps the spelling of field names and the reason phrase with the preserve_case stateful formatter", func() {
		up := startHeadUpstreamWith("HTTP/1.1 200 Fine Thanks\r\nContent-LENGTH: 2\r\nX-Upstream-THING: v\r\n\r\nok")
		keep, plain := freePort(), freePort()
		formatter := func(fields string) string {
			return `{stateful_formatter: {name: envoy.http.stateful_header_formatters.preserve_case, typed_config: ` +
				withType("type.googleapis.com/envoy.extensions.http.header_formatters.preserve_case.v3.PreserveCaseFormatterConfig", fields) + `}}`
		}
		side := func(name string, port int, hcm, h1 string) proxySpec {
			return proxySpec{
				Port: port, Listener: "{name: " + name + "}", HCM: "{stat_prefix: " + name + hcm + "}",
				Clusters: []proxyCluster{{Name: name, Port: up.port,
					Extra: httpProtocolOptions("{explicit_http_config: {http_protocol_options: {" + h1 + "}}}")}},
			}
		}
		p := side("keep", keep, ", http_protocol_options: {header_key_format: "+formatter("{formatter_type_on_envoy_headers: PROPER_CASE}")+"}",
			"header_key_format: "+formatter("{forward_reason_phrase: true}"))
		p.More = []proxySpec{side("plain", plain, "", "")}
		Start(newDir(), p.YAML())
		const req = "GET /p HTTP/1.1\r\nHOST: example.com\r\nX-My-HEADER: 1\r\nx-lower: 2\r\n\r\n"

		resp := rawExchange(keep, req)
		Expect(resp).To(HavePrefix("HTTP/1.1 200 Fine Thanks\r\n"))
		Expect(resp).To(ContainSubstring("\r\nContent-LENGTH: 2\r\n"))
		Expect(resp).To(ContainSubstring("\r\nX-Upstream-THING: v\r\n"))
		// The cluster's formatter writes the names the proxy adds as
		// they are (DEFAULT).
		Expect(resp).To(MatchRegexp(`\r\nserver: \S+\r\n`))
		head := up.last()
		Expect(head).To(HavePrefix("GET /p HTTP/1.1\r\n"))
		Expect(head).To(ContainSubstring("\r\nHOST: example.com\r\n"))
		Expect(head).To(ContainSubstring("\r\nX-My-HEADER: 1\r\n"))
		Expect(head).To(ContainSubstring("\r\nx-lower: 2\r\n"))
		// The connection manager's writes them in proper case.
		Expect(head).To(MatchRegexp(`\r\nX-Request-Id: \S+\r\n`))
		Expect(head).To(ContainSubstring("\r\nX-Forwarded-Proto: http\r\n"))

		resp = rawExchange(plain, req)
		Expect(resp).To(HavePrefix("HTTP/1.1 200 OK\r\n"))
		Expect(resp).To(ContainSubstring("\r\ncontent-length: 2\r\n"))
		Expect(resp).To(ContainSubstring("\r\nx-upstream-thing: v\r\n"))
		head = up.last()
		Expect(head).To(ContainSubstring("\r\nhost: example.com\r\n"))
		Expect(head).To(ContainSubstring("\r\nx-my-header: 1\r\n"))
		Expect(head).To(MatchRegexp(`\r\nx-request-id: \S+\r\n`))
	})

	It("refuses a stateful formatter other than preserve_case with its path", func() {
		cfg := headerCaseBootstrap(freePort(), freePort(), 1,
			`{stateful_formatter: {name: envoy.http.stateful_header_formatters.preserve_case, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}}`)
		r, _ := validate("bootstrap.yaml", cfg)
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("static_resources.listeners[0].filter_chains[0].filters[0].typed_config.http_protocol_options.header_key_format.stateful_formatter"))
	})
})
