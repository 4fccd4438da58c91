package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// wireUpstream is an HTTP/1.1 server that keeps the exact bytes of each
// request it receives (head and body, chunked framing and trailers
// included) and answers each with a fixed response.
type wireUpstream struct {
	port     int
	response string
	mu       sync.Mutex
	requests []string
}

// last is the last request received, "" before any.
func (u *wireUpstream) last() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.requests) == 0 {
		return ""
	}
	return u.requests[len(u.requests)-1]
}

// startWireUpstream serves response to every request.
func startWireUpstream(response string) *wireUpstream {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = ln.Close() })
	u := &wireUpstream{port: ln.Addr().(*net.TCPAddr).Port, response: response}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go u.serve(c)
		}
	}()
	return u
}

// serve reads requests off one connection, bounded by a deadline.
func (u *wireUpstream) serve(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	for {
		var raw bytes.Buffer
		if err := readWireRequest(r, &raw); err != nil {
			return
		}
		u.mu.Lock()
		u.requests = append(u.requests, raw.String())
		u.mu.Unlock()
		if _, err := io.WriteString(c, u.response); err != nil {
			return
		}
	}
}

// readWireRequest reads one request (head, then a Content-Length or
// chunked body) from r into raw, byte for byte as it arrived.
func readWireRequest(r *bufio.Reader, raw *bytes.Buffer) error {
	line := func() (string, error) {
		l, err := r.ReadString('\n')
		raw.WriteString(l)
		return l, err
	}
	n := func(k int) error {
		b := make([]byte, k)
		_, err := io.ReadFull(r, b)
		raw.Write(b)
		return err
	}
	length, chunked := 0, false
	for first := true; ; first = false {
		l, err := line()
		if err != nil {
			return err
		}
		if l == "\r\n" && !first {
			break
		}
		name, value, _ := strings.Cut(strings.TrimRight(l, "\r\n"), ":")
		switch strings.ToLower(name) {
		case "content-length":
			length, _ = strconv.Atoi(strings.TrimSpace(value))
		case "transfer-encoding":
			chunked = strings.EqualFold(strings.TrimSpace(value), "chunked")
		}
	}
	if !chunked {
		return n(length)
	}
	for {
		l, err := line()
		if err != nil {
			return err
		}
		size, err := strconv.ParseInt(strings.TrimRight(l, "\r\n"), 16, 32)
		if err != nil {
			return err
		}
		if size == 0 {
			break
		}
		if err := n(int(size) + 2); err != nil {
			return err
		}
	}
	for {
		l, err := line()
		if err != nil || l == "\r\n" {
			return err
		}
	}
}

// h1OptionsSpec is one listener with the given http_protocol_options (a
// YAML flow mapping's content) in front of one cluster "up" whose extra
// fields are clusterExtra.
func h1OptionsSpec(port, upPort int, h1, clusterExtra string) proxySpec {
	return proxySpec{
		Port:     port,
		HCM:      "{stat_prefix: h1o, http_protocol_options: {" + h1 + "}}",
		Clusters: []proxyCluster{{Name: "up", Port: upPort, Extra: clusterExtra}},
	}
}

var _ = Describe("HTTP/1.1 protocol options", func() {
	const chunkedWithLength = "POST /both HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"

	It("refuses a request with both Content-Length and chunked framing with 400 by default", func() {
		up := startWireUpstream("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
		port := freePort()
		s := Start(newDir(), h1OptionsSpec(port, up.port, "", "").YAML())
		head := rawExchange(port, chunkedWithLength)
		Expect(head).To(HavePrefix("HTTP/1.1 400 "))
		Expect(up.last()).To(BeEmpty())
		Expect(statValue(s, "http.h1o.downstream_cx_protocol_error")).To(Equal("1"))
	})

	It("with allow_chunked_length, forwards such a request chunked, without its Content-Length", func() {
		up := startWireUpstream("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
		port := freePort()
		Start(newDir(), h1OptionsSpec(port, up.port, "allow_chunked_length: true", "").YAML())
		head := rawExchange(port, chunkedWithLength)
		Expect(head).To(HavePrefix("HTTP/1.1 200 "))
		got := up.last()
		Expect(strings.ToLower(got)).NotTo(ContainSubstring("content-length"))
		Expect(strings.ToLower(got)).To(ContainSubstring("transfer-encoding: chunked\r\n"))
		Expect(got).To(HaveSuffix("\r\n\r\n3\r\nabc\r\n0\r\n\r\n"))
		// Other transfer codings are still refused.
		Expect(rawExchange(port, "POST /gz HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: gzip\r\n\r\nabc")).
			To(MatchRegexp(`^HTTP/1.1 (400|501) `))
	})

	It("routes an absolute-form request by its URL, and with allow_absolute_url: false refuses it with 404 as a non-relative path", func() {
		up := startWireUpstream("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
		const absolute = "GET http://example.com/abs?q=1 HTTP/1.1\r\nHost: other\r\n\r\n"
		port := freePort()
		s := Start(newDir(), h1OptionsSpec(port, up.port, "", "").YAML())
		Expect(rawExchange(port, absolute)).To(HavePrefix("HTTP/1.1 200 "))
		Expect(up.last()).To(HavePrefix("GET /abs?q=1 HTTP/1.1\r\n"))
		Expect(strings.ToLower(up.last())).To(ContainSubstring("host: example.com\r\n"), "the URL's host wins over the Host field (RFC 9112 §3.2.2)")
		Expect(statValue(s, "http.h1o.downstream_rq_non_relative_path")).To(Equal("0"))
		// OPTIONS' asterisk form is not a relative path either: Envoy
		// answers it 404 itself.
		Expect(rawExchange(port, "OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n")).To(HavePrefix("HTTP/1.1 404 "))
		Expect(statValue(s, "http.h1o.downstream_rq_non_relative_path")).To(Equal("1"))

		up2 := startWireUpstream("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
		port2 := freePort()
		s2 := Start(newDir(), h1OptionsSpec(port2, up2.port, "allow_absolute_url: false", "").YAML())
		Expect(rawExchange(port2, absolute)).To(HavePrefix("HTTP/1.1 404 "))
		Expect(up2.last()).To(BeEmpty())
		Expect(statValue(s2, "http.h1o.downstream_rq_non_relative_path")).To(Equal("1"))
		Expect(rawExchange(port2, "GET /rel HTTP/1.1\r\nHost: h\r\n\r\n")).To(HavePrefix("HTTP/1.1 200 "), "relative paths are served as before")
		Expect(up2.last()).To(HavePrefix("GET /rel HTTP/1.1\r\n"))
	})

	It("refuses allow_absolute_url on a cluster, with its path", func() {
		res, _ := validate("cluster-aau.yaml", h1OptionsSpec(freePort(), 1, "",
			fmt.Sprintf("{typed_extension_protocol_options: {envoy.extensions.upstreams.http.v3.HttpProtocolOptions: %s}}",
				`{"@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions, explicit_http_config: {http_protocol_options: {allow_absolute_url: true}}}`)).YAML())
		Expect(res.ExitCode).NotTo(Equal(0))
		Expect(res.Stderr).To(ContainSubstring("explicit_http_config.http_protocol_options.allow_absolute_url: not supported by Outrigger on a cluster"))
	})

	It("refuses allow_chunked_length on a cluster, with its path", func() {
		res, _ := validate("cluster-acl.yaml", h1OptionsSpec(freePort(), 1, "",
			fmt.Sprintf("{typed_extension_protocol_options: {envoy.extensions.upstreams.http.v3.HttpProtocolOptions: %s}}",
				`{"@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions, explicit_http_config: {http_protocol_options: {allow_chunked_length: true}}}`)).YAML())
		Expect(res.ExitCode).NotTo(Equal(0))
		Expect(res.Stderr).To(ContainSubstring("explicit_http_config.http_protocol_options.allow_chunked_length"))
	})

	Describe("max_response_headers_kb", func() {
		// A response head of about 70 KiB: over the connection manager's
		// request limit (60 KiB), under Envoy's HTTP/1 response default
		// (80 KiB).
		bigHead := "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nx-big: " + strings.Repeat("v", 70<<10) + "\r\n\r\nok"
		cluster := func(kb string) string {
			return fmt.Sprintf(`{typed_extension_protocol_options: {envoy.extensions.upstreams.http.v3.HttpProtocolOptions: {"@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions, explicit_http_config: {http_protocol_options: {}}, common_http_protocol_options: {max_response_headers_kb: %s}}}}`, kb)
		}

		It("relays a response head under the cluster's limit, 80 KiB by default", func() {
			up := startWireUpstream(bigHead)
			port, small := freePort(), freePort()
			spec := h1OptionsSpec(port, up.port, "", "")
			tight := h1OptionsSpec(small, up.port, "", cluster("64"))
			tight.Listener, tight.HCM = "{name: tight}", "{stat_prefix: tight}"
			tight.Clusters[0].Name = "tight"
			spec.More = []proxySpec{tight}
			Start(newDir(), spec.YAML())
			Expect(rawExchange(port, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")).To(HavePrefix("HTTP/1.1 200 "))
			// Over a 64 KiB limit: the upstream's answer is a protocol
			// error.
			Expect(rawExchange(small, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")).To(HavePrefix("HTTP/1.1 502 "))
		})

		It("is refused on the connection manager and on HTTP/2 clusters, with its path", func() {
			res, _ := validate("hcm-mrh.yaml", proxySpec{Port: freePort(),
				HCM:      "{common_http_protocol_options: {max_response_headers_kb: 64}}",
				Clusters: []proxyCluster{{Name: "up", Port: 1}}}.YAML())
			Expect(res.ExitCode).NotTo(Equal(0))
			Expect(res.Stderr).To(ContainSubstring("common_http_protocol_options.max_response_headers_kb"))

			h2 := strings.Replace(cluster("64"), "http_protocol_options: {}", "http2_protocol_options: {}", 1)
			res, _ = validate("h2-mrh.yaml", h1OptionsSpec(freePort(), 1, "", h2).YAML())
			Expect(res.ExitCode).NotTo(Equal(0))
			Expect(res.Stderr).To(ContainSubstring("common_http_protocol_options.max_response_headers_kb"))
		})
	})

	Describe("stream_error_on_invalid_http_message on HTTP/1", func() {
		// A route answering 400 directly, as any local reply of 400 does.
		spec := func(port int, hcm string) string {
			return proxySpec{Port: port, HCM: hcm,
				Routes: `[{match: {prefix: /bad}, direct_response: {status: 400, body: {inline_string: "no\n"}}},
					{match: {prefix: /}, direct_response: {status: 200, body: {inline_string: "ok\n"}}}]`}.YAML()
		}
		const bad = "GET /bad HTTP/1.1\r\nHost: h\r\n\r\n"

		It("closes the connection after a 400 local reply by default, as Envoy", func() {
			port := freePort()
			Start(newDir(), spec(port, ""))
			rc := dialRawClient(port)
			rc.send(bad)
			resp, _ := rc.response()
			Expect(resp.StatusCode).To(Equal(400))
			Expect(resp.Close).To(BeTrue(), "connection: close expected")
			rc.closedAfter(time.Now())
		})

		It("keeps it open with stream_error_on_invalid_http_message, unless the HTTP/1 override says no", func() {
			port, overridden := freePort(), freePort()
			p := proxySpec{Port: port, HCM: "{stream_error_on_invalid_http_message: true}",
				Routes: `[{match: {prefix: /bad}, direct_response: {status: 400}}, {match: {prefix: /}, direct_response: {status: 200}}]`}
			p.More = []proxySpec{{Port: overridden, Listener: "{name: overridden}",
				HCM:    "{stream_error_on_invalid_http_message: true, http_protocol_options: {override_stream_error_on_invalid_http_message: false}}",
				Routes: `[{match: {prefix: /}, direct_response: {status: 400}}]`}}
			Start(newDir(), p.YAML())
			rc := dialRawClient(port)
			rc.send(bad)
			resp, _ := rc.response()
			Expect(resp.StatusCode).To(Equal(400))
			Expect(resp.Close).To(BeFalse())
			rc.send("GET /next HTTP/1.1\r\nHost: h\r\n\r\n")
			resp, _ = rc.response()
			Expect(resp.StatusCode).To(Equal(200))

			rc = dialRawClient(overridden)
			rc.send(bad)
			resp, _ = rc.response()
			Expect(resp.StatusCode).To(Equal(400))
			Expect(resp.Close).To(BeTrue())
			rc.closedAfter(time.Now())
		})
	})
})
