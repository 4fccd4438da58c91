package bootstrap

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/anypb"
)

// envelopeTypes builds, from a descriptor rather than generated code, the
// shape of a discovery response: test.resource.Envelope {version, repeated
// Any items} and test.resource.Box {name, Any inner}, a wrapper that Anys
// name. Neither is linked in, so only a Decoder given these types can
// resolve a Box.
func envelopeTypes(t testing.TB) (*protoregistry.Types, protoreflect.MessageDescriptor) {
	t.Helper()
	field := func(name string, num int32, label descriptorpb.FieldDescriptorProto_Label, typ descriptorpb.FieldDescriptorProto_Type, typeName string) *descriptorpb.FieldDescriptorProto {
		f := &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(num), Label: label.Enum(), Type: typ.Enum()}
		if typeName != "" {
			f.TypeName = proto.String(typeName)
		}
		return f
	}
	const (
		optional = descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL
		repeated = descriptorpb.FieldDescriptorProto_LABEL_REPEATED
		str      = descriptorpb.FieldDescriptorProto_TYPE_STRING
		msg      = descriptorpb.FieldDescriptorProto_TYPE_MESSAGE
	)
	fdp := &descriptorpb.FileDescriptorProto{
		Name:       proto.String("test/resource/envelope.proto"),
		Package:    proto.String("test.resource"),
		Syntax:     proto.String("proto3"),
		Dependency: []string{"google/protobuf/any.proto"},
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: proto.String("Envelope"), Field: []*descriptorpb.FieldDescriptorProto{
				field("version", 1, optional, str, ""),
				field("items", 2, repeated, msg, ".google.protobuf.Any"),
			}},
			{Name: proto.String("Box"), Field: []*descriptorpb.FieldDescriptorProto{
				field("name", 1, optional, str, ""),
				field("inner", 2, optional, msg, ".google.protobuf.Any"),
			}},
		},
	}
	fd, err := protodesc.NewFile(fdp, protoregistry.GlobalFiles)
	if err != nil {
		t.Fatal(err)
	}
	types := new(protoregistry.Types)
	for i := range fd.Messages().Len() {
		if err := types.RegisterMessage(dynamicpb.NewMessageType(fd.Messages().Get(i))); err != nil {
			t.Fatal(err)
		}
	}
	return types, fd.Messages().ByName("Envelope")
}

// resolverOver resolves the linked types, then local ones.
type resolverOver struct{ local *protoregistry.Types }

func (r resolverOver) FindMessageByName(name protoreflect.FullName) (protoreflect.MessageType, error) {
	if mt, err := protoregistry.GlobalTypes.FindMessageByName(name); err == nil {
		return mt, nil
	}
	return r.local.FindMessageByName(name)
}

func (r resolverOver) FindMessageByURL(url string) (protoreflect.MessageType, error) {
	if mt, err := protoregistry.GlobalTypes.FindMessageByURL(url); err == nil {
		return mt, nil
	}
	return r.local.FindMessageByURL(url)
}

func (r resolverOver) FindExtensionByName(name protoreflect.FullName) (protoreflect.ExtensionType, error) {
	return protoregistry.GlobalTypes.FindExtensionByName(name)
}

func (r resolverOver) FindExtensionByNumber(msg protoreflect.FullName, num protoreflect.FieldNumber) (protoreflect.ExtensionType, error) {
	return protoregistry.GlobalTypes.FindExtensionByNumber(msg, num)
}

// envelopeDecoder returns a decoder that knows the envelope types and an
// empty envelope.
func envelopeDecoder(t testing.TB, allowUnknown bool) (Decoder, func() *dynamicpb.Message) {
	types, md := envelopeTypes(t)
	return Decoder{AllowUnknown: allowUnknown, Types: resolverOver{types}}, func() *dynamicpb.Message { return dynamicpb.NewMessage(md) }
}

// envelopeFiles are the same envelope in each text format.
var envelopeFiles = []string{"envelope.yaml", "envelope.json", "envelope.pb_text"}

func TestDecoderFormats(t *testing.T) {
	d, newEnvelope := envelopeDecoder(t, false)
	want := newEnvelope()
	if unknown, err := d.DecodeFile(filepath.Join("testdata", "resource", envelopeFiles[0]), want); err != nil || len(unknown) > 0 {
		t.Fatalf("decode the YAML envelope: %v, unknown %q", err, unknown)
	}
	items := want.Get(want.Descriptor().Fields().ByName("items")).List()
	if items.Len() != 2 {
		t.Fatalf("decoded %d items, want 2", items.Len())
	}
	var first listenerv3.Listener
	if err := anyOf(items.Get(0).Message()).UnmarshalTo(&first); err != nil || first.GetName() != "ingress" {
		t.Fatalf("items[0] = %v (%v), want the ingress listener", &first, err)
	}

	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join("testdata", "resource", envelopeFiles[0]))
	if err != nil {
		t.Fatal(err)
	}
	yml := writeFile(t, dir, "envelope.yml", data)
	pb := writeFile(t, dir, "ENVELOPE.PB", marshal(t, want))
	paths := []string{yml, pb}
	for _, name := range envelopeFiles[1:] {
		paths = append(paths, filepath.Join("testdata", "resource", name))
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			got := newEnvelope()
			unknown, err := d.DecodeFile(path, got)
			if err != nil || len(unknown) > 0 {
				t.Fatalf("DecodeFile: %v, unknown %q", err, unknown)
			}
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Errorf("decoded %s differs from the YAML file (-yaml +got):\n%s", path, diff)
			}
		})
	}
}

// writeFile writes data to dir/name and returns the path.
func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// anyOf copies a (possibly dynamic) Any into a generated one.
func anyOf(m protoreflect.Message) *anypb.Any {
	fields := m.Descriptor().Fields()
	return &anypb.Any{TypeUrl: m.Get(fields.ByName("type_url")).String(), Value: m.Get(fields.ByName("value")).Bytes()}
}

// unknownEnvelope has unknown fields at the top, in an item and in an item
// wrapped in a Box.
const unknownEnvelope = `
version: "1"
nonce_x: 1
items:
- "@type": type.googleapis.com/envoy.config.listener.v3.Listener
  name: a
  foo: true
  address: {socket_address: {address: 127.0.0.1, port_value: 1, bar: 2}}
- "@type": type.googleapis.com/test.resource.Box
  inner:
    "@type": type.googleapis.com/envoy.config.listener.v3.Listener
    name: b
    baz: [1]
`

// unknownEnvelopeBinary is unknownEnvelope's binary form: unknown fields
// are numbers on the wire (1000 in each listener, 1001 in the Box, 1002 in
// the envelope).
func unknownEnvelopeBinary(t *testing.T) []byte {
	t.Helper()
	const listenerURL = "type.googleapis.com/envoy.config.listener.v3.Listener"
	listener := unknownVarint(marshal(t, &listenerv3.Listener{Name: "a"}), 1000)
	box := unknownVarint(bytesField(nil, 2, marshal(t, &anypb.Any{TypeUrl: listenerURL, Value: listener})), 1001)
	env := bytesField(nil, 2, marshal(t, &anypb.Any{TypeUrl: listenerURL, Value: listener}))
	env = bytesField(env, 2, marshal(t, &anypb.Any{TypeUrl: "type.googleapis.com/test.resource.Box", Value: box}))
	return unknownVarint(env, 1002)
}

// bytesField appends a length-delimited field.
func bytesField(b []byte, num protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), v)
}

// unknownVarint appends the varint field num, with value 1.
func unknownVarint(b []byte, num protowire.Number) []byte {
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), 1)
}

func TestDecoderUnknownFields(t *testing.T) {
	tests := map[string]struct {
		path         string
		binary       bool
		allowUnknown bool
		wantUnknown  []string
		wantErr      []string
	}{
		"yaml strict": {
			path: "e.yaml",
			wantErr: []string{
				"items[0].address.socket_address.bar: unknown field",
				"items[0].foo: unknown field",
				"items[1].inner.baz: unknown field",
				"nonce_x: unknown field",
			},
		},
		"yaml allowed": {
			path:         "e.yaml",
			allowUnknown: true,
			wantUnknown:  []string{"items[0].address.socket_address.bar", "items[0].foo", "items[1].inner.baz", "nonce_x"},
		},
		"binary strict": {
			path:   "e.pb",
			binary: true,
			wantErr: []string{
				"1002: unknown field",
				"items[0].1000: unknown field",
				"items[1].1001: unknown field",
				"items[1].inner.1000: unknown field",
			},
		},
		"binary allowed": {
			path:         "e.pb",
			binary:       true,
			allowUnknown: true,
			wantUnknown:  []string{"1002", "items[0].1000", "items[1].1001", "items[1].inner.1000"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d, newEnvelope := envelopeDecoder(t, tc.allowUnknown)
			data := []byte(unknownEnvelope)
			if tc.binary {
				data = unknownEnvelopeBinary(t)
			}
			env := newEnvelope()
			unknown, err := d.DecodeBytes(tc.path, data, env)
			got := errorLines(err)
			slices.Sort(got)
			if diff := cmp.Diff(tc.wantErr, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			slices.Sort(unknown)
			if diff := cmp.Diff(tc.wantUnknown, unknown); diff != "" {
				t.Errorf("unknown fields (-want +got):\n%s", diff)
			}
			if err != nil {
				return
			}
			// What is left decodes strictly: the unknown fields are gone,
			// from inside the Anys too.
			strict, newStrict := envelopeDecoder(t, false)
			again := newStrict()
			if _, err := strict.DecodeBytes("e.pb", marshal(t, env), again); err != nil {
				t.Errorf("the cleaned envelope does not decode strictly: %v", err)
			}
		})
	}
}

func TestDecoderTypes(t *testing.T) {
	// Without the envelope types, a Box cannot be resolved.
	types, md := envelopeTypes(t)
	data := []byte(`{items: [{"@type": type.googleapis.com/test.resource.Box, name: x}]}`)
	_, err := DecodeBytes("e.yaml", data, dynamicpb.NewMessage(md), false)
	if diff := cmp.Diff([]string{`items[0]: unknown type "type.googleapis.com/test.resource.Box"`}, errorLines(err)); diff != "" {
		t.Errorf("linked types only (-want +got):\n%s", diff)
	}
	if _, err := (Decoder{Types: resolverOver{types}}).DecodeBytes("e.yaml", data, dynamicpb.NewMessage(md)); err != nil {
		t.Errorf("with the envelope types: %v", err)
	}
}

func TestDecodeFileListener(t *testing.T) {
	path := writeTemp(t, "l.yaml", []byte("name: x\naddress: {socket_address: {address: 127.0.0.1, port_value: 80}}\nfoo: 1\n"))
	var strict listenerv3.Listener
	if _, err := DecodeFile(path, &strict, false); err == nil || err.Error() != "foo: unknown field" {
		t.Errorf("strict DecodeFile error = %v, want foo: unknown field", err)
	}
	var lenient listenerv3.Listener
	unknown, err := DecodeFile(path, &lenient, true)
	if err != nil || !slices.Equal(unknown, []string{"foo"}) || lenient.GetAddress().GetSocketAddress().GetPortValue() != 80 {
		t.Errorf("lenient DecodeFile = %v, unknown %q, error %v", &lenient, unknown, err)
	}
}

func TestDecodeFileErrors(t *testing.T) {
	tests := map[string]struct {
		path string
		data string // decoded with DecodeBytes when set; else path is read
	}{
		"missing file":       {path: "testdata/resource/missing.yaml"},
		"no extension":       {path: "envelope", data: "{}"},
		"unknown extension":  {path: "envelope.txt", data: "{}"},
		"yaml syntax":        {path: "e.yaml", data: "items: [\n"},
		"not an object":      {path: "e.json", data: "[1]"},
		"unknown type":       {path: "e.yaml", data: `items: [{"@type": type.googleapis.com/x.Y}]`},
		"missing type":       {path: "e.yaml", data: `items: [{name: a}]`},
		"bad value":          {path: "e.yaml", data: `items: [{"@type": type.googleapis.com/envoy.config.listener.v3.Listener, name: [1]}]`},
		"text syntax":        {path: "e.pb_text", data: `items {`},
		"binary garbage":     {path: "e.pb", data: "\xff\xff"},
		"duplicate yaml key": {path: "e.yaml", data: "version: a\nversion: b\n"},
	}
	d, newEnvelope := envelopeDecoder(t, false)
	var out []string
	for name, tc := range tests {
		var err error
		if tc.data == "" {
			_, err = d.DecodeFile(tc.path, newEnvelope())
		} else {
			_, err = d.DecodeBytes(tc.path, []byte(tc.data), newEnvelope())
		}
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		// protobuf's messages randomly use a no-break space, so that
		// nobody depends on their exact text.
		msg := strings.ReplaceAll(err.Error(), "\u00a0", " ")
		out = append(out, name+": "+strings.ReplaceAll(msg, "\n", "\n\t"))
	}
	slices.Sort(out)
	checkGolden(t, "resource/errors.golden", []byte(strings.Join(out, "\n")+"\n"))
}
