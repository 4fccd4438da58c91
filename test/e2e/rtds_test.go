package e2e

import (
	"encoding/json"
	"time"

	runtimev3 "github.com/envoyproxy/go-control-plane/envoy/service/runtime/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/types/known/structpb"
)

var _ = Describe("RTDS: a runtime layer from a management server", func() {
	// rtdsSnapshot is a snapshot of version with no listener and the
	// Runtime resources runtimes (name, then its layer).
	rtdsSnapshot := func(version string, runtimes map[string]map[string]any) *cachev3.Snapshot {
		GinkgoHelper()
		var rs []types.Resource
		for name, layer := range runtimes {
			s, err := structpb.NewStruct(layer)
			Expect(err).NotTo(HaveOccurred())
			rs = append(rs, &runtimev3.Runtime{Name: name, Layer: s})
		}
		snap, err := cachev3.NewSnapshot(version, map[resourcev3.Type][]types.Resource{
			resourcev3.ListenerType: {},
			resourcev3.RuntimeType:  rs,
		})
		Expect(err).NotTo(HaveOccurred())
		return snap
	}
	// bootstrap is adsBootstrap with a static layer, the RTDS layer
	// "dynamic" over the ADS stream, and an admin layer.
	bootstrap := func(port int) string {
		GinkgoHelper()
		var b map[string]any
		Expect(json.Unmarshal([]byte(adsBootstrap(port, "")), &b)).To(Succeed())
		b["layered_runtime"] = flowYAML(`{layers: [
			{name: base, static_layer: {k: static, s: kept}},
			{name: dynamic, rtds_layer: {name: dynamic, rtds_config: {ads: {}, resource_api_version: V3}}},
			{name: admin, admin_layer: {}}]}`)
		out, err := json.Marshal(b)
		Expect(err).NotTo(HaveOccurred())
		return string(out)
	}
	value := func(s *Sidecar, key string) func() string {
		return func() string { return s.Runtime().Entries[key].FinalValue }
	}

	It("serves the layer's values in its place, follows updates, and NACKs a bad layer keeping the values in force", func() {
		m := startManagementServer()
		m.set(rtdsSnapshot("v1", map[string]map[string]any{"dynamic": {"k": "rtds", "n": map[string]any{"a": 1}}}))
		s := Start(newDir(), bootstrap(m.port))
		waitLive(s)

		rt := s.Runtime()
		Expect(rt.Layers).To(Equal([]string{"base", "dynamic", "admin"}))
		Expect(rt.Entries).To(HaveKeyWithValue("k", RuntimeEntry{LayerValues: []string{"static", "rtds", ""}, FinalValue: "rtds"}))
		Expect(rt.Entries).To(HaveKeyWithValue("n.a", RuntimeEntry{LayerValues: []string{"", "1", ""}, FinalValue: "1"}))
		Expect(rt.Entries["s"].FinalValue).To(Equal("kept"))
		Expect(statValue(s, "runtime.update_success")).To(Equal("1"))
		Expect(statValue(s, "runtime.version_text")).To(Equal(`"v1"`))

		By("an update replaces the layer whole")
		m.set(rtdsSnapshot("v2", map[string]map[string]any{"dynamic": {"k": "rtds2"}}))
		Eventually(value(s, "k"), 10*time.Second).Should(Equal("rtds2"))
		Expect(s.Runtime().Entries).NotTo(HaveKey("n.a"))

		By("a layer that is not a runtime tree is rejected")
		m.set(rtdsSnapshot("v3", map[string]map[string]any{"dynamic": {"k": []any{"a", "list"}}}))
		Eventually(func() string { return statValue(s, "runtime.update_rejected") }, 10*time.Second).ShouldNot(Equal("0"))
		Expect(value(s, "k")()).To(Equal("rtds2"))
		Expect(statValue(s, "runtime.version_text")).To(Equal(`"v2"`))

		By("the admin layer still overrides it")
		Expect(s.Post("/runtime_modify?k=admin").Status).To(Equal(200))
		Expect(value(s, "k")()).To(Equal("admin"))
	})

	It("refuses an RTDS layer from a file with its path", func() {
		r, _ := validate("b.yaml", `{admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}},
			layered_runtime: {layers: [{name: d, rtds_layer: {name: d, rtds_config: {path_config_source: {path: /nonexistent/rtds.yaml}}}}]}}`)
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("layered_runtime.layers[0].rtds_layer.rtds_config: not supported by Outrigger other than ads or api_config_source"))
	})

	It("empties the layer when the resource is removed over the delta protocol", func() {
		m := startManagementServer()
		m.set(rtdsSnapshot("v1", map[string]map[string]any{"dynamic": {"k": "rtds"}}))
		s := Start(newDir(), toDelta(bootstrap(m.port)))
		waitLive(s)
		Expect(value(s, "k")()).To(Equal("rtds"))

		m.set(rtdsSnapshot("v2", nil))
		Eventually(value(s, "k"), 10*time.Second).Should(Equal("static"))
		Expect(statValue(s, "runtime.update_rejected")).To(Equal("0"))
	})
})
