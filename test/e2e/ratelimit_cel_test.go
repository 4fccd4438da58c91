package e2e

import (
	"net/http"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// celDescriptor is a route rate limit extension action with a CEL
// descriptor (a YAML flow item).
func celDescriptor(key, text string, skipIfError bool) string {
	return `{extension: {name: envoy.rate_limit_descriptors.expr, typed_config: {"@type": type.googleapis.com/envoy.extensions.rate_limit_descriptors.expr.v3.Descriptor, ` +
		"descriptor_key: " + key + ", skip_if_error: " + strconv.FormatBool(skipIfError) + ", text: " + strconv.Quote(text) + "}}}"
}

var _ = Describe("The rate limit extension action with CEL descriptors", func() {
	It("sends the values of the expressions over the request and the connection, and follows skip_if_error", func() {
		rls, rlsPort := startRLS()
		up := echoHeadersUpstream()
		port := freePort()
		spec := proxySpec{
			Port:     port,
			Listener: "{name: front}",
			HCM:      "{stat_prefix: front}",
			Filters:  "[" + rlsFilter("rls", "domain: cel") + "]",
			Routes: `[{match: {prefix: /}, route: {cluster: up, rate_limits: [
				{actions: [` + celDescriptor("who", "request.headers['x-user']", false) + `, ` +
				celDescriptor("src", "source.address.startsWith('127.0.0.1:') && source.port > 0", false) + `, ` +
				celDescriptor("proto", "request.protocol", false) + `, ` +
				// Envoy's defaults have no + on strings: an error, skipped.
				celDescriptor("cat", "request.method + '!'", true) + `]},
				{actions: [{generic_key: {descriptor_value: g}}, ` + celDescriptor("code", "response.code", true) + `]},
				{actions: [{generic_key: {descriptor_value: strict}}, ` + celDescriptor("code", "response.code", false) + `]}]}}]`,
			Clusters: []proxyCluster{
				{Name: "up", Port: portNum(up)},
				{Name: "rls", Port: rlsPort, Extra: h2cOptions()},
			},
		}
		Start(newDir(), spec.YAML())
		client := &http.Client{Timeout: 10 * time.Second}

		r := httpDo(client, "GET", listenerURL(port, "/items?page=2"), nil, http.Header{"X-User": {"ann"}})
		Expect(r.Status).To(Equal(200))
		Expect(rls.lastDescriptors("cel")).To(Equal([][]string{
			{"who=ann", "src=true", "proto=HTTP/1.1"},
			{"generic_key=g"},
		}), "response.code is not known at the request: skip_if_error skips the entry, and without it the descriptor is dropped")

		// Without x-user the first expression fails: no first descriptor.
		Expect(httpDo(client, "GET", listenerURL(port, "/"), nil, nil).Status).To(Equal(200))
		Expect(rls.lastDescriptors("cel")).To(Equal([][]string{{"generic_key=g"}}))
	})

	It("is refused at load when an expression does not parse, naming the field", func() {
		spec := proxySpec{
			Port:     freePort(),
			Listener: "{name: front}",
			HCM:      "{stat_prefix: front}",
			Routes: `[{match: {prefix: /}, route: {cluster: up, rate_limits: [{actions: [` +
				celDescriptor("k", "request.headers[", false) + `]}]}}]`,
			Clusters: []proxyCluster{{Name: "up", Port: freePort()}},
		}
		res, _ := validate("bad.yaml", spec.YAML())
		Expect(res.ExitCode).NotTo(Equal(0))
		Expect(res.Stderr + res.Stdout).To(ContainSubstring("rate_limits[0].actions[0].extension.typed_config.text: ERROR"))
	})
})
