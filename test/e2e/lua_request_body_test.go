package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// luaRequestBodyScript reads the request's body and trailers the ways
// Envoy's API offers: trailers() alone (the body streams on meanwhile),
// bodyChunks() then trailers(), and body() then trailers().
const luaRequestBodyScript = `
function envoy_on_request(h)
  local path = h:headers():get(":path")
  if string.find(path, "/trailers") then
    local t = h:trailers()
    if t then
      t:add("x-lua-saw", t:get("x-req-t"))
      t:replace("x-req-t", "changed")
    end
  elseif string.find(path, "/chunks") then
    h:headers():add("x-before", "1")
    local total = 0
    for c in h:bodyChunks() do
      total = total + c:length()
      c:setBytes(string.upper(c:getBytes(0, c:length())))
    end
    local late = pcall(function() h:headers():add("x-late", "1") end)
    local t = h:trailers()
    if t then
      t:add("x-chunk-bytes", total)
      t:add("x-late-refused", tostring(not late))
    end
  elseif string.find(path, "/buffered") then
    local b = h:body()
    local t = h:trailers()
    h:headers():add("x-body-len", b:length())
    if t then t:add("x-lua-saw", t:get("x-req-t")) end
  elseif string.find(path, "/fail") then
    for c in h:bodyChunks() do error("boom in a chunk") end
  elseif string.find(path, "/late") then
    h:trailers()
    error("boom after the trailers")
  end
end
`

// luaRequestBodyTrailers are the trailers the specs' requests declare
// (Go's servers keep only declared request trailers).
const luaRequestBodyTrailers = "x-req-t, x-lua-saw, x-chunk-bytes, x-late-refused"

// recordedRequest is what the recording upstream received.
type recordedRequest struct {
	Body     string            `json:"body"`
	Header   map[string]string `json:"header"`
	Trailers map[string]string `json:"trailers"`
}

// recordingUpstream answers with what it received (headers, body and
// trailers, first value of each) as JSON; it tells firstBytes of the
// first bytes of each body as soon as they arrive, before the rest.
func recordingUpstream(h2 bool, firstBytes chan<- string) string {
	GinkgoHelper()
	return httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := recordedRequest{Header: map[string]string{}, Trailers: map[string]string{}}
		buf := make([]byte, 64<<10)
		n, err := r.Body.Read(buf)
		select {
		case firstBytes <- string(buf[:n]):
		default:
		}
		rest := []byte{}
		if err == nil {
			rest, _ = io.ReadAll(r.Body)
		}
		rec.Body = string(buf[:n]) + string(rest)
		for k, v := range r.Header {
			rec.Header[strings.ToLower(k)] = v[0]
		}
		for k, v := range r.Trailer {
			if len(v) > 0 {
				rec.Trailers[strings.ToLower(k)] = v[0]
			}
		}
		w.Header().Set("content-type", "application/json")
		_ = json.NewEncoder(w).Encode(rec)
	}), h2)
}

var _ = Describe("The Lua filter on request bodies and trailers", Ordered, func() {
	var (
		sc         *Sidecar
		port       int
		firstBytes chan string
	)

	BeforeAll(func() {
		firstBytes = make(chan string, 1)
		h1Up := recordingUpstream(false, firstBytes)
		h2Up := recordingUpstream(true, firstBytes)
		port = freePort()
		sc = Start(newDir(), proxySpec{
			Port: port,
			HCM:  "{stat_prefix: web, http_protocol_options: {enable_trailers: true}}",
			Routes: `[{match: {prefix: /h2}, route: {cluster: h2}},
				{match: {prefix: /}, route: {cluster: h1}}]`,
			Filters: "[" + httpFilter("envoy.filters.http.lua", luaType, `{stat_prefix: my, inline_code: `+strconv.Quote(luaRequestBodyScript)+`}`) + "]",
			Clusters: []proxyCluster{
				{Name: "h1", Port: portNum(h1Up), Extra: httpProtocolOptions("{explicit_http_config: {http_protocol_options: {enable_trailers: true}}}")},
				{Name: "h2", Port: portNum(h2Up), Extra: h2cOptions()},
			},
		}.YAML())
	})

	// h1 sends a chunked request with the trailer x-req-t: v1 over
	// HTTP/1.1, its body in the pieces given, and returns the status and
	// what the upstream received.
	h1 := func(path string, pieces ...string) (int, recordedRequest) {
		GinkgoHelper()
		var raw strings.Builder
		fmt.Fprintf(&raw, "POST %s HTTP/1.1\r\nhost: example.com\r\ntrailer: %s\r\ntransfer-encoding: chunked\r\n\r\n", path, luaRequestBodyTrailers)
		for _, p := range pieces {
			fmt.Fprintf(&raw, "%x\r\n%s\r\n", len(p), p)
		}
		raw.WriteString("0\r\nx-req-t: v1\r\n\r\n")
		return exchangeRecorded(port, raw.String())
	}
	// h2 posts body with the trailer x-req-t: v2 over h2c.
	h2 := func(path, body string) (int, recordedRequest) {
		GinkgoHelper()
		req, err := http.NewRequest("POST", listenerURL(port, path), strings.NewReader(body))
		Expect(err).NotTo(HaveOccurred())
		req.ContentLength = -1
		req.Trailer = http.Header{"X-Req-T": {"v2"}, "X-Lua-Saw": nil, "X-Chunk-Bytes": nil, "X-Late-Refused": nil}
		resp, err := httpClients()["HTTP/2"].Do(req)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		return decodeRecorded(resp)
	}

	It("gives trailers() the request's trailers and sends the script's changes upstream, over HTTP/1.1 and h2c", func() {
		status, got := h1("/trailers", "hello")
		Expect(status).To(Equal(200))
		Expect(got.Body).To(Equal("hello"))
		Expect(got.Trailers).To(HaveKeyWithValue("x-req-t", "changed"))
		Expect(got.Trailers).To(HaveKeyWithValue("x-lua-saw", "v1"))

		status, got = h2("/h2/trailers", "hello")
		Expect(status).To(Equal(200))
		Expect(got.Body).To(Equal("hello"))
		Expect(got.Trailers).To(HaveKeyWithValue("x-req-t", "changed"))
		Expect(got.Trailers).To(HaveKeyWithValue("x-lua-saw", "v2"))
	})

	It("gives trailers() nil for a request without trailers", func() {
		r := httpDo(&http.Client{Timeout: 10 * time.Second}, "POST", listenerURL(port, "/trailers"), strings.NewReader("plain"), nil)
		Expect(r.Status).To(Equal(200))
		var got recordedRequest
		Expect(json.Unmarshal([]byte(r.Body), &got)).To(Succeed())
		Expect(got.Body).To(Equal("plain"))
		Expect(got.Trailers).To(BeEmpty())
	})

	It("streams the request body to bodyChunks() piece by piece, the head gone on before, then its trailers", func() {
		for _, tc := range []struct {
			name string
			send func() (int, recordedRequest)
			saw  string
		}{
			{"HTTP/1.1", func() (int, recordedRequest) { return h1("/chunks", "hello", " world") }, "v1"},
			{"h2c", func() (int, recordedRequest) { return h2("/h2/chunks", "hello world") }, "v2"},
		} {
			status, got := tc.send()
			Expect(status).To(Equal(200), tc.name)
			Expect(got.Body).To(Equal("HELLO WORLD"), tc.name)
			Expect(got.Header).To(HaveKeyWithValue("x-before", "1"), tc.name)
			Expect(got.Header).NotTo(HaveKey("x-late"), tc.name)
			Expect(got.Trailers).To(HaveKeyWithValue("x-chunk-bytes", "11"), tc.name)
			Expect(got.Trailers).To(HaveKeyWithValue("x-late-refused", "true"), tc.name)
			Expect(got.Trailers).To(HaveKeyWithValue("x-req-t", tc.saw), tc.name)
		}
	})

	It("lets the first piece reach the upstream before the client sends the rest (nothing is buffered)", func() {
		for len(firstBytes) > 0 {
			<-firstBytes
		}
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 5*time.Second)
		Expect(err).NotTo(HaveOccurred())
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		_, err = fmt.Fprintf(c, "POST /chunks HTTP/1.1\r\nhost: example.com\r\ntrailer: %s\r\ntransfer-encoding: chunked\r\n\r\n5\r\nfirst\r\n", luaRequestBodyTrailers)
		Expect(err).NotTo(HaveOccurred())
		Eventually(firstBytes, 5*time.Second).Should(Receive(Equal("FIRST")))
		_, err = io.WriteString(c, "6\r\n-later\r\n0\r\nx-req-t: v1\r\n\r\n")
		Expect(err).NotTo(HaveOccurred())
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		status, got := decodeRecorded(resp)
		Expect(status).To(Equal(200))
		Expect(got.Body).To(Equal("FIRST-LATER"))
		Expect(got.Trailers).To(HaveKeyWithValue("x-chunk-bytes", "11"))
	})

	It("gives trailers() after body() the trailers and keeps the headers editable", func() {
		status, got := h1("/buffered", "hello")
		Expect(status).To(Equal(200))
		Expect(got.Body).To(Equal("hello"))
		Expect(got.Header).To(HaveKeyWithValue("x-body-len", "5"))
		Expect(got.Trailers).To(HaveKeyWithValue("x-lua-saw", "v1"))
		Expect(got.Trailers).To(HaveKeyWithValue("x-req-t", "v1"))
	})

	It("answers 500 to a script that fails while streaming the body or after its end, and counts it", func() {
		before, err := strconv.Atoi(statValue(sc, "http.web.lua.my.errors"))
		Expect(err).NotTo(HaveOccurred())
		status, _ := h1raw(port, "/fail", "boom")
		Expect(status).To(Equal(500))
		Eventually(sc.Stderr).Should(ContainSubstring("boom in a chunk"))
		// At the body's end too: the request does not go on.
		status, _ = h1raw(port, "/late", "boom")
		Expect(status).To(Equal(500))
		Eventually(sc.Stderr).Should(ContainSubstring("boom after the trailers"))
		Expect(statValue(sc, "http.web.lua.my.errors")).To(Equal(strconv.Itoa(before + 2)))
	})
})

// h1raw sends a chunked POST of body to path and returns the status and
// the response body.
func h1raw(port int, path, body string) (int, string) {
	GinkgoHelper()
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 5*time.Second)
	Expect(err).NotTo(HaveOccurred())
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = fmt.Fprintf(c, "POST %s HTTP/1.1\r\nhost: example.com\r\ntransfer-encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", path, len(body), body)
	Expect(err).NotTo(HaveOccurred())
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// exchangeRecorded sends a raw HTTP/1.1 request to port and decodes the
// recording upstream's answer.
func exchangeRecorded(port int, request string) (int, recordedRequest) {
	GinkgoHelper()
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 5*time.Second)
	Expect(err).NotTo(HaveOccurred())
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = io.WriteString(c, request)
	Expect(err).NotTo(HaveOccurred())
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	return decodeRecorded(resp)
}

// decodeRecorded reads a recording upstream's answer.
func decodeRecorded(resp *http.Response) (int, recordedRequest) {
	GinkgoHelper()
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	var got recordedRequest
	if resp.StatusCode == 200 {
		Expect(json.Unmarshal(b, &got)).To(Succeed(), string(b))
	}
	return resp.StatusCode, got
}
