package e2e

import (
	"net/url"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"                                   // dumped types
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"                     // dumped types
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3" // dumped types
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"
)

// configDump fetches path and decodes the ConfigDump it answers.
func configDump(s *Sidecar, path string) *adminv3.ConfigDump {
	GinkgoHelper()
	r := s.Get(path)
	Expect(r.Status).To(Equal(200), r.Body)
	Expect(r.Header.Get("Content-Type")).To(Equal("application/json"))
	d := &adminv3.ConfigDump{}
	Expect(protojson.Unmarshal([]byte(r.Body), d)).To(Succeed(), r.Body)
	return d
}

// dumpTypes lists the type URLs of a dump's configs.
func dumpTypes(d *adminv3.ConfigDump) []string {
	var out []string
	for _, c := range d.GetConfigs() {
		out = append(out, c.GetTypeUrl())
	}
	return out
}

const adminTypes = "type.googleapis.com/envoy.admin.v3."

var _ = Describe("Config dump", func() {
	bootstrap := func() string {
		return Bootstrap{Listeners: []Listener{
			helloListener("first", freePort(), "one"),
			helloListener("second", freePort(), "two"),
		}}.YAML()
	}

	It("dumps a static configuration in Envoy's order", func() {
		s := Start(newDir(), bootstrap())
		want := []string{
			adminTypes + "BootstrapConfigDump", adminTypes + "ClustersConfigDump",
			adminTypes + "ListenersConfigDump", adminTypes + "ScopedRoutesConfigDump",
			adminTypes + "RoutesConfigDump", adminTypes + "SecretsConfigDump",
		}
		Expect(dumpTypes(configDump(s, "/config_dump"))).To(Equal(want))
		Expect(dumpTypes(configDump(s, "/config_dump?resource=&mask=&name_regex="))).To(Equal(want))

		var listeners adminv3.ListenersConfigDump
		Expect(configDump(s, "/config_dump").GetConfigs()[2].UnmarshalTo(&listeners)).To(Succeed())
		Expect(listeners.GetStaticListeners()).To(HaveLen(2))
		Expect(listeners.GetStaticListeners()[0].GetLastUpdated().IsValid()).To(BeTrue())
	})

	It("lists one resource kind, masked and filtered by name", func() {
		s := Start(newDir(), bootstrap())
		d := configDump(s, "/config_dump?resource=static_listeners&mask=listener.name&name_regex="+url.QueryEscape("sec.*"))
		Expect(d.GetConfigs()).To(HaveLen(1))
		var l adminv3.ListenersConfigDump_StaticListener
		Expect(d.GetConfigs()[0].UnmarshalTo(&l)).To(Succeed())
		Expect(l.GetLastUpdated()).To(BeNil(), "masked out")
		Expect(string(l.GetListener().GetValue())).To(ContainSubstring("second"))

		routes := configDump(s, "/config_dump?resource=static_route_configs&mask=route_config.name")
		Expect(routes.GetConfigs()).To(HaveLen(2), "one inline route configuration per listener")
	})

	DescribeTable("refuses bad parameters",
		func(path string, status int, body string) {
			s := Start(newDir(), bootstrap())
			r := s.Get(path)
			Expect(r.Status).To(Equal(status))
			Expect(r.Header.Get("Content-Type")).To(Equal("text/plain"))
			Expect(r.Body).To(Equal(body))
		},
		Entry("a mask that fits no dump", "/config_dump?mask=no_such_field", 400,
			"FieldMask no_such_field could not be successfully applied to any configs."),
		Entry("a mask that does not fit the resource", "/config_dump?resource=static_listeners&mask=listener.nope", 400,
			"FieldMask paths: \"listener.nope\"\n could not be successfully used."),
		Entry("a field that is not a list", "/config_dump?resource=version_info", 400,
			"version_info is not a repeated field. Use ?mask=version_info to get only this field"),
		Entry("an unknown resource", "/config_dump?resource=nope", 404, "nope not found in config dump"),
		Entry("a bad name_regex", "/config_dump?name_regex=%5Ba", 400,
			"INVALID_ARGUMENT: Error while parsing name_regex from [a: missing closing ]: `[a`"),
	)

	It("has no unready targets once live", func() {
		s := Start(newDir(), bootstrap())
		for _, path := range []string{"/init_dump", "/init_dump?mask=listener", "/init_dump?mask=cluster"} {
			r := s.Get(path)
			Expect(r.Status).To(Equal(200), path)
			Expect(r.Body).To(Equal("{}\n"), path)
		}
	})
})
