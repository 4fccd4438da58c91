package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// tapRecordBootstrap is a listener on port whose static tap writes every
// request's buffered trace under prefix, with the Tap fields in record.
func tapRecordBootstrap(port int, up, prefix, record string) string {
	GinkgoHelper()
	return proxySpec{
		Port: port,
		Filters: "[" + httpFilter("envoy.filters.http.tap", "type.googleapis.com/envoy.extensions.filters.http.tap.v3.Tap",
			`{`+record+` common_config: {static_config: {match: {any_match: true},
				output_config: {sinks: [{format: JSON_BODY_AS_STRING, file_per_tap: {path_prefix: "`+prefix+`"}}]}}}}`) + "]",
		Clusters: []proxyCluster{{Name: "up", Port: portNum(up)}},
	}.YAML()
}

// tapRecorded is the part of a buffered trace the record_* fields add.
type tapRecorded struct {
	HTTPBufferedTrace struct {
		Request struct {
			HeadersReceivedTime *time.Time `json:"headers_received_time"`
		} `json:"request"`
		Response struct {
			HeadersReceivedTime *time.Time `json:"headers_received_time"`
		} `json:"response"`
		DownstreamConnection *struct {
			LocalAddress  tapSocketAddress `json:"local_address"`
			RemoteAddress tapSocketAddress `json:"remote_address"`
		} `json:"downstream_connection"`
	} `json:"http_buffered_trace"`
}

type tapSocketAddress struct {
	SocketAddress struct {
		Address   string `json:"address"`
		PortValue int    `json:"port_value"`
	} `json:"socket_address"`
}

var _ = Describe("The tap filter's record fields", func() {
	up := func() string {
		return httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }), false)
	}

	// oneTrace sends one request on a connection of its own and returns
	// the trace written for it and the client's port.
	oneTrace := func(port int, prefix string) (tapRecorded, int) {
		GinkgoHelper()
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		Expect(err).NotTo(HaveOccurred())
		defer c.Close()
		_, err = fmt.Fprintf(c, "GET /r HTTP/1.1\r\nHost: tapped\r\n\r\n")
		Expect(err).NotTo(HaveOccurred())
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.StatusCode).To(Equal(200))
		var t tapRecorded
		Eventually(func(g Gomega) {
			files, _ := filepath.Glob(prefix + "_*.json")
			g.Expect(files).To(HaveLen(1))
			b, err := os.ReadFile(files[0])
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(json.Unmarshal(b, &t)).To(Succeed())
		}, 10*time.Second).Should(Succeed())
		return t, c.LocalAddr().(*net.TCPAddr).Port
	}

	It("record the heads' times and the downstream connection in buffered traces", func() {
		prefix := filepath.Join(newDir(), "trace")
		port := freePort()
		before := time.Now()
		Start(newDir(), tapRecordBootstrap(port, up(), prefix, "record_headers_received_time: true, record_downstream_connection: true,"))
		t, clientPort := oneTrace(port, prefix)
		bt := t.HTTPBufferedTrace
		Expect(bt.Request.HeadersReceivedTime).NotTo(BeNil())
		Expect(bt.Response.HeadersReceivedTime).NotTo(BeNil())
		Expect(*bt.Request.HeadersReceivedTime).To(BeTemporally(">=", before))
		Expect(*bt.Response.HeadersReceivedTime).To(BeTemporally(">=", *bt.Request.HeadersReceivedTime))
		Expect(bt.DownstreamConnection).NotTo(BeNil())
		Expect(bt.DownstreamConnection.LocalAddress.SocketAddress.Address).To(Equal("127.0.0.1"))
		Expect(bt.DownstreamConnection.LocalAddress.SocketAddress.PortValue).To(Equal(port))
		Expect(bt.DownstreamConnection.RemoteAddress.SocketAddress.Address).To(Equal("127.0.0.1"))
		Expect(bt.DownstreamConnection.RemoteAddress.SocketAddress.PortValue).To(Equal(clientPort))
	})

	It("leave them out when not asked", func() {
		prefix := filepath.Join(newDir(), "trace")
		port := freePort()
		Start(newDir(), tapRecordBootstrap(port, up(), prefix, ""))
		t, _ := oneTrace(port, prefix)
		Expect(t.HTTPBufferedTrace.Request.HeadersReceivedTime).To(BeNil())
		Expect(t.HTTPBufferedTrace.Response.HeadersReceivedTime).To(BeNil())
		Expect(t.HTTPBufferedTrace.DownstreamConnection).To(BeNil())
	})

	It("refuse record_upstream_connection and the admin sinks of a static configuration, with their paths and reasons", func() {
		res, _ := validate("tap.yaml", tapRecordBootstrap(freePort(), "127.0.0.1:1", "/tmp/x", "record_upstream_connection: true,"))
		Expect(res.ExitCode).To(Equal(1))
		Expect(res.Stderr).To(ContainSubstring("typed_config.record_upstream_connection: not supported by Outrigger: the trace's upstream_connection"))
		for sink, want := range map[string]string{
			"streaming_admin": "not supported here: the admin sink is for a /tap request's tap_config",
			"buffered_admin":  "not supported by Outrigger: Envoy's /tap keeps a session's traces",
		} {
			cfg := proxySpec{
				Port: freePort(),
				Filters: "[" + httpFilter("envoy.filters.http.tap", "type.googleapis.com/envoy.extensions.filters.http.tap.v3.Tap",
					`{common_config: {static_config: {match: {any_match: true}, output_config: {sinks: [{`+sink+`: {}}]}}}}`) + "]",
				Clusters: []proxyCluster{{Name: "up", Port: freePort()}},
			}.YAML()
			res, _ := validate("tap.yaml", cfg)
			Expect(res.ExitCode).To(Equal(1), sink)
			Expect(res.Stderr).To(ContainSubstring("sinks[0]."+sink+": "+want), sink)
		}
	})
})
