package e2e

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("HTTP connection manager fields Envoy declares but does not implement", func() {
	It("refuses path_normalization_options and represent_ipv4_remote_address_as_ipv4_mapped_ipv6 with their path, saying Envoy does not implement them", func() {
		for _, field := range []string{
			"path_normalization_options: {forwarding_transformation: {operations: [{merge_slashes: {}}]}}",
			"represent_ipv4_remote_address_as_ipv4_mapped_ipv6: true",
		} {
			r, _ := validate("bootstrap.yaml", proxySpec{Port: freePort(), HCM: "{stat_prefix: ingress, " + field + "}",
				Clusters: []proxyCluster{{Name: "up", Port: 1}}}.YAML())
			Expect(r.ExitCode).To(Equal(1), field)
			Expect(r.Stderr).To(MatchRegexp(`typed_config\.(path_normalization_options|represent_ipv4_remote_address_as_ipv4_mapped_ipv6): not implemented by Envoy either`), field)
		}
	})
})
