package bootstrap

import (
	"fmt"
	"slices"
	"testing"

	"github.com/envoyproxy/go-control-plane/envoy/annotations"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func mustAny(t *testing.T, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func scanned(s *DeprecatedScanner, m proto.Message, prefix string) []string {
	var got []string
	for _, f := range s.Scan(m, prefix) {
		got = append(got, fmt.Sprintf("%s %s", f.Path, f.Name))
	}
	return got
}

func TestDeprecatedScanner(t *testing.T) {
	//lint:ignore SA1019 the test sets deprecated fields on purpose
	invalidMessaging := &corev3.Http2ProtocolOptions{StreamErrorOnInvalidHttpMessaging: true}
	c := edsCluster()
	// A deprecated field.
	//lint:ignore SA1019 the test sets deprecated fields on purpose
	c.Http2ProtocolOptions = &corev3.Http2ProtocolOptions{}
	// A map of Anys.
	c.TypedExtensionProtocolOptions = map[string]*anypb.Any{
		"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": mustAny(t, &httpv3.HttpProtocolOptions{
			UpstreamProtocolOptions: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
				ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{Http2ProtocolOptions: invalidMessaging},
			}},
		}),
	}
	var s DeprecatedScanner
	want := []string{
		"resources[0].http2_protocol_options envoy.config.cluster.v3.Cluster.http2_protocol_options",
		`resources[0].typed_extension_protocol_options["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"].explicit_http_config.http2_protocol_options.stream_error_on_invalid_http_messaging envoy.config.core.v3.Http2ProtocolOptions.stream_error_on_invalid_http_messaging`,
	}
	// Twice: the second scan uses what the first worked out.
	for range 2 {
		if diff := cmp.Diff(want, scanned(&s, c, "resources[0]")); diff != "" {
			t.Errorf("cluster (-want +got):\n%s", diff)
		}
	}
	if got := scanned(&s, edsCluster(), ""); got != nil {
		t.Errorf("a plain cluster: %v, want nothing", got)
	}

	// A list, and a typed_config Any inside it.
	hcm := &hcmv3.HttpConnectionManager{StatPrefix: "x", Http2ProtocolOptions: invalidMessaging}
	l := &listenerv3.Listener{
		Name: "l",
		FilterChains: []*listenerv3.FilterChain{
			{Filters: []*listenerv3.Filter{{Name: "plain", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(t, &hcmv3.HttpConnectionManager{StatPrefix: "y"})}}}},
			{Filters: []*listenerv3.Filter{{Name: "hcm", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(t, hcm)}}}},
		},
	}
	want = []string{"filter_chains[1].filters[0].typed_config.http2_protocol_options.stream_error_on_invalid_http_messaging envoy.config.core.v3.Http2ProtocolOptions.stream_error_on_invalid_http_messaging"}
	if diff := cmp.Diff(want, scanned(&s, l, "")); diff != "" {
		t.Errorf("listener (-want +got):\n%s", diff)
	}

	// An Any of a type that holds nothing deprecated, or of a type not
	// linked in, or not decodable, is passed over.
	for _, a := range []*anypb.Any{
		mustAny(t, wrapperspb.UInt32(7)),
		{TypeUrl: "type.googleapis.com/not.linked.In", Value: []byte{1, 2, 3}},
		{TypeUrl: "type.googleapis.com/" + string((&hcmv3.HttpConnectionManager{}).ProtoReflect().Descriptor().FullName()), Value: []byte{0xff}},
	} {
		f := &listenerv3.Filter{Name: "f", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: a}}
		if got := scanned(&s, f, ""); got != nil {
			t.Errorf("%s: %v, want nothing", a.GetTypeUrl(), got)
		}
	}
	if got := scanned(&s, durationpb.New(1), ""); got != nil {
		t.Errorf("duration: %v", got)
	}
}

// TestDisallowedByDefault lists the fields and enum values linked in
// that carry Envoy's disallowed_by_default annotations, which Envoy
// refuses unless a runtime override allows them: docs/compat.md names
// them, as Outrigger warns about them as about other deprecated fields.
// A new API version adding one makes this fail, for the docs to follow.
func TestDisallowedByDefault(t *testing.T) {
	var found []string
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		var msgs func(protoreflect.MessageDescriptors)
		enums := func(es protoreflect.EnumDescriptors) {
			for i := range es.Len() {
				vs := es.Get(i).Values()
				for j := range vs.Len() {
					if proto.GetExtension(vs.Get(j).Options(), annotations.E_DisallowedByDefaultEnum).(bool) {
						found = append(found, string(vs.Get(j).FullName()))
					}
				}
			}
		}
		msgs = func(ms protoreflect.MessageDescriptors) {
			for i := range ms.Len() {
				m := ms.Get(i)
				fs := m.Fields()
				for j := range fs.Len() {
					if proto.GetExtension(fs.Get(j).Options(), annotations.E_DisallowedByDefault).(bool) {
						found = append(found, string(fs.Get(j).FullName()))
					}
				}
				enums(m.Enums())
				msgs(m.Messages())
			}
		}
		enums(fd.Enums())
		msgs(fd.Messages())
		return true
	})
	slices.Sort(found)
	want := []string{
		"envoy.config.core.v3.ApiConfigSource.DEPRECATED_AND_UNAVAILABLE_DO_NOT_USE",
		"envoy.config.route.v3.RateLimit.Action.dynamic_metadata",
		"envoy.config.trace.v3.DynamicOtConfig.config",
		"envoy.config.trace.v3.DynamicOtConfig.library",
		"envoy.config.trace.v3.ZipkinConfig.DEPRECATED_AND_UNAVAILABLE_DO_NOT_USE",
	}
	if diff := cmp.Diff(want, found); diff != "" {
		t.Errorf("disallowed by default (-want +got):\n%s", diff)
	}
}

// TestDeprecatedScannerEnums covers deprecated enum values, in a plain
// field, a list and a map's values, and deprecated fields inside map
// values: no v3 API linked in has a deprecated enum value today, so the
// test declares its own types.
func TestDeprecatedScannerEnums(t *testing.T) {
	fdp := &descriptorpb.FileDescriptorProto{
		Name:    proto.String("test/depr.proto"),
		Package: proto.String("depr"),
		Syntax:  proto.String("proto3"),
		EnumType: []*descriptorpb.EnumDescriptorProto{{
			Name: proto.String("Kind"),
			Value: []*descriptorpb.EnumValueDescriptorProto{
				{Name: proto.String("NEW"), Number: proto.Int32(0)},
				{Name: proto.String("OLD"), Number: proto.Int32(1), Options: &descriptorpb.EnumValueOptions{Deprecated: proto.Bool(true)}},
			},
		}},
		MessageType: []*descriptorpb.DescriptorProto{
			{
				Name: proto.String("Leaf"),
				Field: []*descriptorpb.FieldDescriptorProto{
					{Name: proto.String("old"), Number: proto.Int32(1), Type: descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), JsonName: proto.String("old"), Options: &descriptorpb.FieldOptions{Deprecated: proto.Bool(true)}},
				},
			},
			{
				Name: proto.String("Root"),
				Field: []*descriptorpb.FieldDescriptorProto{
					{Name: proto.String("kind"), Number: proto.Int32(1), Type: descriptorpb.FieldDescriptorProto_TYPE_ENUM.Enum(), TypeName: proto.String(".depr.Kind"), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), JsonName: proto.String("kind")},
					{Name: proto.String("kinds"), Number: proto.Int32(2), Type: descriptorpb.FieldDescriptorProto_TYPE_ENUM.Enum(), TypeName: proto.String(".depr.Kind"), Label: descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum(), JsonName: proto.String("kinds")},
					{Name: proto.String("by_name"), Number: proto.Int32(3), Type: descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(), TypeName: proto.String(".depr.Root.ByNameEntry"), Label: descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum(), JsonName: proto.String("byName")},
					{Name: proto.String("kind_by_name"), Number: proto.Int32(4), Type: descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(), TypeName: proto.String(".depr.Root.KindByNameEntry"), Label: descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum(), JsonName: proto.String("kindByName")},
					{Name: proto.String("self"), Number: proto.Int32(5), Type: descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(), TypeName: proto.String(".depr.Root"), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), JsonName: proto.String("self")},
				},
				NestedType: []*descriptorpb.DescriptorProto{
					{
						Name:    proto.String("ByNameEntry"),
						Options: &descriptorpb.MessageOptions{MapEntry: proto.Bool(true)},
						Field: []*descriptorpb.FieldDescriptorProto{
							{Name: proto.String("key"), Number: proto.Int32(1), Type: descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), JsonName: proto.String("key")},
							{Name: proto.String("value"), Number: proto.Int32(2), Type: descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(), TypeName: proto.String(".depr.Leaf"), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), JsonName: proto.String("value")},
						},
					},
					{
						Name:    proto.String("KindByNameEntry"),
						Options: &descriptorpb.MessageOptions{MapEntry: proto.Bool(true)},
						Field: []*descriptorpb.FieldDescriptorProto{
							{Name: proto.String("key"), Number: proto.Int32(1), Type: descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), JsonName: proto.String("key")},
							{Name: proto.String("value"), Number: proto.Int32(2), Type: descriptorpb.FieldDescriptorProto_TYPE_ENUM.Enum(), TypeName: proto.String(".depr.Kind"), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), JsonName: proto.String("value")},
						},
					},
				},
			},
		},
	}
	fd, err := protodesc.NewFile(fdp, nil)
	if err != nil {
		t.Fatal(err)
	}
	rootMD := fd.Messages().ByName("Root")
	leafMD := fd.Messages().ByName("Leaf")
	root := dynamicpb.NewMessage(rootMD)
	f := rootMD.Fields()
	root.Set(f.ByName("kind"), protoreflect.ValueOfEnum(1))
	kinds := root.Mutable(f.ByName("kinds")).List()
	kinds.Append(protoreflect.ValueOfEnum(0))
	kinds.Append(protoreflect.ValueOfEnum(1))
	leaf := dynamicpb.NewMessage(leafMD)
	leaf.Set(leafMD.Fields().ByName("old"), protoreflect.ValueOfString("x"))
	root.Mutable(f.ByName("by_name")).Map().Set(protoreflect.ValueOfString("b").MapKey(), protoreflect.ValueOfMessage(leaf))
	kbn := root.Mutable(f.ByName("kind_by_name")).Map()
	kbn.Set(protoreflect.ValueOfString("z").MapKey(), protoreflect.ValueOfEnum(1))
	kbn.Set(protoreflect.ValueOfString("a").MapKey(), protoreflect.ValueOfEnum(0))
	// The type is recursive: a value inside itself is walked too.
	inner := dynamicpb.NewMessage(rootMD)
	inner.Set(f.ByName("kind"), protoreflect.ValueOfEnum(1))
	root.Set(f.ByName("self"), protoreflect.ValueOfMessage(inner))

	var s DeprecatedScanner
	want := []string{
		"kind depr.OLD",
		"kinds[1] depr.OLD",
		`by_name["b"].old depr.Leaf.old`,
		`kind_by_name["z"] depr.OLD`,
		"self.kind depr.OLD",
	}
	if diff := cmp.Diff(want, scanned(&s, root, "")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
