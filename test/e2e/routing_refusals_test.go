package e2e

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Route, retry and connection manager fields Outrigger refuses", func() {
	It("refuses them with their path and why", func() {
		for _, c := range []struct {
			spec proxySpec
			want string
		}{
			{proxySpec{Routes: `[{match: {prefix: /}, route: {cluster: up, retry_policy_typed_config: {"@type": type.googleapis.com/google.protobuf.Empty}}}]`},
				`routes\[0\]\.route\.retry_policy_typed_config: not implemented by Envoy either`},
			{proxySpec{VirtualHost: `{retry_policy_typed_config: {"@type": type.googleapis.com/google.protobuf.Empty}}`},
				`virtual_hosts\[0\]\.retry_policy_typed_config: not implemented by Envoy either`},
			{proxySpec{Routes: `[{match: {prefix: /}, filter_action: {}}]`},
				`routes\[0\]\.filter_action: not implemented by Envoy either`},
			{proxySpec{Routes: `[{match: {prefix: /}, route: {cluster: up, retry_policy: {retry_on: 5xx, retry_options_predicates: [{name: p, typed_config: {"@type": type.googleapis.com/google.protobuf.Empty}}]}}}]`},
				`retry_policy\.retry_options_predicates: not supported by Outrigger: Envoy has no built-in retry options predicate`},
			{proxySpec{HCM: `{typed_header_validation_config: {name: envoy.http.header_validators.envoy_default, typed_config: {"@type": type.googleapis.com/google.protobuf.Empty}}}`},
				`typed_config\.typed_header_validation_config: not implemented by Envoy either`},
			{proxySpec{Clusters: []proxyCluster{{Name: "up", Port: 1, Extra: httpProtocolOptions(`{explicit_http_config: {http_protocol_options: {}}, outlier_detection: {}}`)}}},
				`HttpProtocolOptions"\]\.outlier_detection: not supported by Outrigger yet`},
		} {
			spec := c.spec
			spec.Port = freePort()
			if spec.Clusters == nil {
				spec.Clusters = []proxyCluster{{Name: "up", Port: 1}}
			}
			r, _ := validate("bootstrap.yaml", spec.YAML())
			Expect(r.ExitCode).To(Equal(1), c.want)
			Expect(r.Stderr).To(MatchRegexp(c.want))
		}
	})
})
