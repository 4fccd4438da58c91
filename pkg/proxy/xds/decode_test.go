package xds

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/outrigger-dev/outrigger/pkg/proxy/bootstrap"
)

// newTestDecoder decodes listener responses.
func newTestDecoder(t testing.TB) *decoder {
	t.Helper()
	types, err := newDiscoveryTypes()
	if err != nil {
		t.Fatal(err)
	}
	rt, err := protoregistry.GlobalTypes.FindMessageByURL(ListenerTypeURL)
	if err != nil {
		t.Fatal(err)
	}
	return &decoder{types: types, typeURL: ListenerTypeURL, resourceType: rt}
}

func TestDecodeFormats(t *testing.T) {
	d := newTestDecoder(t)
	want, unknown, err := d.decodeFile("testdata/lds.yaml", false)
	if err != nil || len(unknown) > 0 {
		t.Fatalf("decode lds.yaml: %v, unknown %q", err, unknown)
	}
	if want.VersionInfo != "7" || len(want.Resources) != 2 {
		t.Fatalf("lds.yaml = version %q with %d resources, want 7 with 2", want.VersionInfo, len(want.Resources))
	}
	for i, name := range []string{"ingress", "wrapped"} {
		l, ok := want.Resources[i].(*listenerv3.Listener)
		if !ok || l.GetName() != name {
			t.Fatalf("resources[%d] = %v, want listener %q", i, want.Resources[i], name)
		}
	}
	if got := want.Resources[1].(*listenerv3.Listener).GetFilterChains()[0].GetFilters()[0].GetTypedConfig().GetTypeUrl(); !strings.HasSuffix(got, "HttpConnectionManager") {
		t.Errorf("the wrapped listener's filter lost its typed_config: %q", got)
	}

	// The same response as binary, and the YAML under .yml.
	dir := t.TempDir()
	yaml, err := os.ReadFile("testdata/lds.yaml")
	if err != nil {
		t.Fatal(err)
	}
	resp := d.types.newResponse()
	if _, err := (bootstrap.Decoder{Types: d.types.resolver}).DecodeFile("testdata/lds.yaml", resp); err != nil {
		t.Fatal(err)
	}
	binary, err := proto.MarshalOptions{Deterministic: true}.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{
		writeFile(t, dir, "lds.yml", string(yaml)),
		writeFile(t, dir, "lds.pb", string(binary)),
		"testdata/lds.json",
		"testdata/lds.pb_text",
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			got, unknown, err := d.decodeFile(path, false)
			if err != nil || len(unknown) > 0 {
				t.Fatalf("decode: %v, unknown %q", err, unknown)
			}
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Errorf("update differs from lds.yaml's (-yaml +got):\n%s", diff)
			}
		})
	}
}

// TestDecodeErrors records, in a golden file, what each broken file is
// told, and whether it counts as a failure or a rejection.
func TestDecodeErrors(t *testing.T) {
	const (
		listener = `"@type": type.googleapis.com/envoy.config.listener.v3.Listener`
		resource = `"@type": type.googleapis.com/envoy.service.discovery.v3.Resource`
		cluster  = `"@type": type.googleapis.com/envoy.config.cluster.v3.Cluster`
	)
	tests := map[string]string{
		"yaml syntax":              "resources: [\n",
		"empty":                    "\n",
		"not an object":            "[1]",
		"unknown resource type":    `resources: [{"@type": type.googleapis.com/x.Y}]`,
		"resource of another type": `resources: [{` + cluster + `, name: c}]`,
		"response of another type": `{type_url: type.googleapis.com/envoy.config.cluster.v3.Cluster, resources: [{` + listener + `, name: a}]}`,
		"wrapped another type":     `resources: [{` + resource + `, resource: {` + cluster + `, name: c}}]`,
		"wrapper without resource": `resources: [{` + resource + `, name: a}]`,
		"wrapper name mismatch":    `resources: [{` + resource + `, name: a, resource: {` + listener + `, name: b}}]`,
		"missing type":             `resources: [{name: a}]`,
		"several problems":         `{type_url: x, resources: [{` + cluster + `}, {` + listener + `, name: ok}, {` + resource + `}]}`,
		"unknown field (strict)":   `{nonce2: 1, resources: [{` + listener + `, name: a, foo: 1}]}`,
		"unknown and broken":       `{nonce2: 1, resources: [{` + listener + `, name: [1]}]}`,
	}
	d := newTestDecoder(t)
	dir := t.TempDir()
	var out []string
	for name, content := range tests {
		path := writeFile(t, dir, "lds.yaml", content)
		_, _, err := d.decodeFile(path, false)
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		kind := "failure"
		if rej := (*rejection)(nil); errors.As(err, &rej) {
			kind = "rejected"
		}
		out = append(out, name+" ("+kind+"):\n\t"+strings.ReplaceAll(err.Error(), "\n", "\n\t"))
	}
	slices.Sort(out)
	checkGolden(t, "decode_errors.golden", strings.Join(out, "\n")+"\n")
}

// TestDecodeDropsUnknownFields checks that the resources handed to apply
// carry no unknown field once the policy lets them through, whatever the
// format: the binary form keeps unknown fields on the wire unless they are
// stripped.
func TestDecodeDropsUnknownFields(t *testing.T) {
	d := newTestDecoder(t)
	listener := &listenerv3.Listener{Name: "a"}
	raw, err := proto.Marshal(listener)
	if err != nil {
		t.Fatal(err)
	}
	raw = append(raw, 0xc0, 0x3e, 0x01) // field 1000 = 1
	resp := d.types.newResponse()
	fields := resp.Descriptor().Fields()
	item := resp.NewField(fields.ByName("resources")).List()
	a := item.NewElement().Message()
	a.Set(a.Descriptor().Fields().ByName("type_url"), protoreflect.ValueOfString(ListenerTypeURL))
	a.Set(a.Descriptor().Fields().ByName("value"), protoreflect.ValueOfBytes(raw))
	item.Append(protoreflect.ValueOfMessage(a))
	resp.Set(fields.ByName("resources"), protoreflect.ValueOfList(item))
	binary, err := proto.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		path string
		data []byte
		want []string
	}{
		"yaml":   {path: "lds.yaml", data: []byte(unknownLDS), want: []string{"nonce2", "resources[0].foo"}},
		"binary": {path: "lds.pb", data: binary, want: []string{"resources[0].1000"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			u, unknown, err := d.decodeBytes(tc.path, tc.data, true)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, unknown); diff != "" {
				t.Errorf("unknown fields (-want +got):\n%s", diff)
			}
			if len(u.Resources) != 1 {
				t.Fatalf("%d resources, want 1", len(u.Resources))
			}
			if got := u.Resources[0].ProtoReflect().GetUnknown(); len(got) != 0 {
				t.Errorf("the resource kept unknown fields: %x", got)
			}
		})
	}
}
