package e2e

import (
	"fmt"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// ipDetectionSpec is a listener whose connection manager has the given
// original_ip_detection_extensions (a YAML flow list) and answers every
// request itself, telling the client which address it took for it.
func ipDetectionSpec(port int, extensions string) proxySpec {
	return proxySpec{
		Port:   port,
		HCM:    "{stat_prefix: ipd, original_ip_detection_extensions: " + extensions + "}",
		Routes: `[{match: {prefix: /}, direct_response: {status: 200, body: {inline_string: ok}}, response_headers_to_add: [{header: {key: x-client, value: "%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%"}}]}]`,
	}
}

const (
	customHeaderExt = `{name: envoy.http.original_ip_detection.custom_header, typed_config: {"@type": type.googleapis.com/envoy.extensions.http.original_ip_detection.custom_header.v3.CustomHeaderConfig, header_name: x-real-ip%s}}`
	xffExt          = `{name: envoy.http.original_ip_detection.xff, typed_config: {"@type": type.googleapis.com/envoy.extensions.http.original_ip_detection.xff.v3.XffConfig%s}}`
)

// ipDetect sends a GET with the given headers and returns the status and
// the address the proxy took for the client.
func ipDetect(port int, h http.Header) (int, string) {
	GinkgoHelper()
	r := httpDo(httpClients()["HTTP/1.1"], "GET", listenerURL(port, "/"), nil, h)
	return r.Status, r.Header.Get("x-client")
}

var _ = Describe("Original IP detection extensions", func() {
	It("custom_header: takes the client's address from the header, and refuses requests without a valid one when asked", func() {
		port := freePort()
		s := Start(newDir(), ipDetectionSpec(port, "["+fmtExt(customHeaderExt, ", reject_with_status: {code: 401}")+"]").YAML())
		status, client := ipDetect(port, http.Header{"X-Real-Ip": {"203.0.113.7"}})
		Expect(status).To(Equal(200))
		Expect(client).To(Equal("203.0.113.7"))
		status, client = ipDetect(port, http.Header{"X-Real-Ip": {"2001:db8::5"}})
		Expect(status).To(Equal(200))
		Expect(client).To(Equal("2001:db8::5"))

		status, _ = ipDetect(port, nil)
		Expect(status).To(Equal(401))
		status, _ = ipDetect(port, http.Header{"X-Real-Ip": {"203.0.113.7:80"}})
		Expect(status).To(Equal(401), "an address with a port is not an IP address")
		Expect(statValue(s, "http.ipd.downstream_rq_rejected_via_ip_detection")).To(Equal("2"))
	})

	It("xff with trusted CIDRs: skips the trusted proxies from the right, only when the peer is one; the next extension is asked when it finds nothing", func() {
		port := freePort()
		// The peer (127.0.0.1) is trusted by the first extension; the
		// second one is only asked when the first finds nothing.
		Start(newDir(), ipDetectionSpec(port, "["+
			fmtExt(xffExt, ", xff_trusted_cidrs: {cidrs: [{address_prefix: 127.0.0.0, prefix_len: 8}, {address_prefix: 10.0.0.0, prefix_len: 8}]}")+", "+
			fmtExt(customHeaderExt, "")+"]").YAML())
		_, client := ipDetect(port, http.Header{"X-Forwarded-For": {"198.51.100.9, 10.1.2.3"}})
		Expect(client).To(Equal("198.51.100.9"))
		_, client = ipDetect(port, http.Header{"X-Forwarded-For": {"192.0.2.1, 198.51.100.9, 10.1.2.3"}})
		Expect(client).To(Equal("198.51.100.9"), "the rightmost address that is not a trusted proxy")
		_, client = ipDetect(port, http.Header{"X-Forwarded-For": {"10.0.0.5, 10.1.2.3"}})
		Expect(client).To(Equal("10.0.0.5"), "all trusted: the leftmost")
		_, client = ipDetect(port, http.Header{"X-Real-Ip": {"203.0.113.7"}})
		Expect(client).To(Equal("203.0.113.7"), "no x-forwarded-for: the custom header's extension decides")
		_, client = ipDetect(port, nil)
		Expect(client).To(Equal("127.0.0.1"), "nothing found: the peer's address")

		// A peer that is not a trusted proxy: x-forwarded-for is not read.
		port2 := freePort()
		Start(newDir(), ipDetectionSpec(port2, "["+fmtExt(xffExt, ", xff_trusted_cidrs: {cidrs: [{address_prefix: 10.0.0.0, prefix_len: 8}]}")+"]").YAML())
		_, client = ipDetect(port2, http.Header{"X-Forwarded-For": {"198.51.100.9"}})
		Expect(client).To(Equal("127.0.0.1"))
	})

	It("xff with trusted hops takes the address that many entries from the right", func() {
		port := freePort()
		Start(newDir(), ipDetectionSpec(port, "["+fmtExt(xffExt, ", xff_num_trusted_hops: 1")+"]").YAML())
		_, client := ipDetect(port, http.Header{"X-Forwarded-For": {"192.0.2.1, 198.51.100.9, 10.1.2.3"}})
		Expect(client).To(Equal("198.51.100.9"))
	})

	DescribeTable("refuses what Envoy refuses, with the field path",
		func(hcm, want string) {
			r, _ := validate("bootstrap.yaml", proxySpec{
				Port:   freePort(),
				HCM:    hcm,
				Routes: "[{match: {prefix: /}, direct_response: {status: 200}}]",
			}.YAML())
			Expect(r.ExitCode).To(Equal(1))
			Expect(r.Stderr).To(ContainSubstring(want))
		},
		Entry("beside use_remote_address", "{use_remote_address: true, original_ip_detection_extensions: ["+fmtExt(customHeaderExt, "")+"]}",
			"original_ip_detection_extensions: Original IP detection extensions and use_remote_address may not be mixed"),
		Entry("beside xff_num_trusted_hops", "{xff_num_trusted_hops: 1, original_ip_detection_extensions: ["+fmtExt(customHeaderExt, "")+"]}",
			"original_ip_detection_extensions: Original IP detection extensions and xff_num_trusted_hops may not be mixed"),
		Entry("skip_xff_append: false", "{original_ip_detection_extensions: ["+fmtExt(xffExt, ", skip_xff_append: false")+"]}",
			"original_ip_detection_extensions[0].typed_config.skip_xff_append: false is not supported by Outrigger"),
		Entry("both hops and CIDRs", "{original_ip_detection_extensions: ["+fmtExt(xffExt, ", xff_num_trusted_hops: 1, xff_trusted_cidrs: {cidrs: []}")+"]}",
			"original_ip_detection_extensions[0].typed_config.xff_num_trusted_hops: only one of xff_num_trusted_hops and xff_trusted_cidrs may be set"),
	)
})

// fmtExt fills an extension template's extra fields.
func fmtExt(tmpl, extra string) string {
	return fmt.Sprintf(tmpl, extra)
}
