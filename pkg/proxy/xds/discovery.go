package xds

import (
	"fmt"

	// Linked for their descriptors, which the discovery file imports.
	_ "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	_ "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	_ "google.golang.org/protobuf/types/known/anypb"
	_ "google.golang.org/protobuf/types/known/durationpb"
)

// Full names of the discovery messages a resource file is made of.
const (
	responseName protoreflect.FullName = "envoy.service.discovery.v3.DiscoveryResponse"
	resourceName protoreflect.FullName = "envoy.service.discovery.v3.Resource"
)

// discoveryTypes are the messages of Envoy's
// envoy/service/discovery/v3/discovery.proto that a resource file uses,
// built from a descriptor: DiscoveryResponse (the file), Resource (the
// optional wrapper around each resource) and what they hold. Field names
// and numbers are Envoy's, so every format (JSON and YAML names, text
// names, binary numbers) reads as Envoy reads it.
type discoveryTypes struct {
	response protoreflect.MessageDescriptor
	resource protoreflect.MessageDescriptor
	// resolver resolves Any type URLs: the linked types, then these.
	resolver typeResolver
}

// newDiscoveryTypes builds the discovery messages. It only fails if the
// imported descriptors are missing, a build problem.
func newDiscoveryTypes() (*discoveryTypes, error) {
	fd, err := protodesc.NewFile(discoveryFile(), protoregistry.GlobalFiles)
	if err != nil {
		return nil, fmt.Errorf("build the discovery message types: %w", err)
	}
	local := new(protoregistry.Types)
	if err := registerMessages(local, fd.Messages()); err != nil {
		return nil, fmt.Errorf("register the discovery message types: %w", err)
	}
	return &discoveryTypes{
		response: fd.Messages().ByName(responseName.Name()),
		resource: fd.Messages().ByName(resourceName.Name()),
		resolver: typeResolver{local: local},
	}, nil
}

// newResponse returns an empty DiscoveryResponse.
func (t *discoveryTypes) newResponse() *dynamicpb.Message {
	return dynamicpb.NewMessage(t.response)
}

// registerMessages registers mds and their nested messages as dynamic
// types in r.
func registerMessages(r *protoregistry.Types, mds protoreflect.MessageDescriptors) error {
	for i := range mds.Len() {
		md := mds.Get(i)
		if err := r.RegisterMessage(dynamicpb.NewMessageType(md)); err != nil {
			return err
		}
		if err := registerMessages(r, md.Messages()); err != nil {
			return err
		}
	}
	return nil
}

// typeResolver resolves the linked (generated) types first and the
// discovery types second, so that generated discovery types win if they
// are ever linked in. Extensions are only looked up among linked types.
type typeResolver struct {
	local *protoregistry.Types
}

// FindMessageByName implements protoregistry.MessageTypeResolver.
func (r typeResolver) FindMessageByName(name protoreflect.FullName) (protoreflect.MessageType, error) {
	if mt, err := protoregistry.GlobalTypes.FindMessageByName(name); err == nil {
		return mt, nil
	}
	return r.local.FindMessageByName(name)
}

// FindMessageByURL implements protoregistry.MessageTypeResolver.
func (r typeResolver) FindMessageByURL(url string) (protoreflect.MessageType, error) {
	if mt, err := protoregistry.GlobalTypes.FindMessageByURL(url); err == nil {
		return mt, nil
	}
	return r.local.FindMessageByURL(url)
}

// FindExtensionByName implements protoregistry.ExtensionTypeResolver.
func (r typeResolver) FindExtensionByName(name protoreflect.FullName) (protoreflect.ExtensionType, error) {
	return protoregistry.GlobalTypes.FindExtensionByName(name)
}

// FindExtensionByNumber implements protoregistry.ExtensionTypeResolver.
func (r typeResolver) FindExtensionByNumber(message protoreflect.FullName, field protoreflect.FieldNumber) (protoreflect.ExtensionType, error) {
	return protoregistry.GlobalTypes.FindExtensionByNumber(message, field)
}

// Descriptor building blocks.
const (
	typeString  = descriptorpb.FieldDescriptorProto_TYPE_STRING
	typeBool    = descriptorpb.FieldDescriptorProto_TYPE_BOOL
	typeMessage = descriptorpb.FieldDescriptorProto_TYPE_MESSAGE
)

// field is a singular field; typeName is set for message fields.
func field(name string, number int32, typ descriptorpb.FieldDescriptorProto_Type, typeName string) *descriptorpb.FieldDescriptorProto {
	f := &descriptorpb.FieldDescriptorProto{
		Name:   proto.String(name),
		Number: proto.Int32(number),
		Label:  descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
		Type:   typ.Enum(),
	}
	if typeName != "" {
		f.TypeName = proto.String(typeName)
	}
	return f
}

// repeated is a repeated field.
func repeated(name string, number int32, typ descriptorpb.FieldDescriptorProto_Type, typeName string) *descriptorpb.FieldDescriptorProto {
	f := field(name, number, typ, typeName)
	f.Label = descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
	return f
}

// inOneof puts f in the message's oneof number index.
func inOneof(index int32, f *descriptorpb.FieldDescriptorProto) *descriptorpb.FieldDescriptorProto {
	f.OneofIndex = proto.Int32(index)
	return f
}

// discoveryFile describes the messages of discovery.proto that a resource
// file can hold, field for field as in go-control-plane envoy v1.40.0
// (declaration order included: it is the JSON output order). Request
// messages and the incremental (delta) protocol's messages are left out:
// a file holds a response. Validation annotations are left out too: a
// response carries no constraints that matter to a file.
func discoveryFile() *descriptorpb.FileDescriptorProto {
	const pkg = ".envoy.service.discovery.v3."
	oneof := func(names ...string) []*descriptorpb.OneofDescriptorProto {
		out := make([]*descriptorpb.OneofDescriptorProto, len(names))
		for i, n := range names {
			out[i] = &descriptorpb.OneofDescriptorProto{Name: proto.String(n)}
		}
		return out
	}
	return &descriptorpb.FileDescriptorProto{
		Name:    proto.String("envoy/service/discovery/v3/discovery.proto"),
		Package: proto.String("envoy.service.discovery.v3"),
		Syntax:  proto.String("proto3"),
		Dependency: []string{
			"envoy/config/core/v3/base.proto",
			"google/protobuf/any.proto",
			"google/protobuf/duration.proto",
			"google/rpc/status.proto",
		},
		MessageType: []*descriptorpb.DescriptorProto{{
			Name: proto.String("DiscoveryResponse"),
			Field: []*descriptorpb.FieldDescriptorProto{
				field("version_info", 1, typeString, ""),
				repeated("resources", 2, typeMessage, ".google.protobuf.Any"),
				field("canary", 3, typeBool, ""),
				field("type_url", 4, typeString, ""),
				field("nonce", 5, typeString, ""),
				field("control_plane", 6, typeMessage, ".envoy.config.core.v3.ControlPlane"),
				repeated("resource_errors", 7, typeMessage, pkg+"ResourceError"),
			},
		}, {
			Name: proto.String("Resource"),
			Field: []*descriptorpb.FieldDescriptorProto{
				field("name", 3, typeString, ""),
				field("resource_name", 8, typeMessage, pkg+"ResourceName"),
				repeated("aliases", 4, typeString, ""),
				field("version", 1, typeString, ""),
				field("resource", 2, typeMessage, ".google.protobuf.Any"),
				field("ttl", 6, typeMessage, ".google.protobuf.Duration"),
				field("cache_control", 7, typeMessage, pkg+"Resource.CacheControl"),
				field("metadata", 9, typeMessage, ".envoy.config.core.v3.Metadata"),
			},
			NestedType: []*descriptorpb.DescriptorProto{{
				Name:  proto.String("CacheControl"),
				Field: []*descriptorpb.FieldDescriptorProto{field("do_not_cache", 1, typeBool, "")},
			}},
		}, {
			Name: proto.String("ResourceName"),
			Field: []*descriptorpb.FieldDescriptorProto{
				field("name", 1, typeString, ""),
				field("dynamic_parameter_constraints", 2, typeMessage, pkg+"DynamicParameterConstraints"),
			},
		}, {
			Name: proto.String("ResourceError"),
			Field: []*descriptorpb.FieldDescriptorProto{
				field("resource_name", 1, typeMessage, pkg+"ResourceName"),
				field("error_detail", 2, typeMessage, ".google.rpc.Status"),
			},
		}, {
			Name: proto.String("DynamicParameterConstraints"),
			Field: []*descriptorpb.FieldDescriptorProto{
				inOneof(0, field("constraint", 1, typeMessage, pkg+"DynamicParameterConstraints.SingleConstraint")),
				inOneof(0, field("or_constraints", 2, typeMessage, pkg+"DynamicParameterConstraints.ConstraintList")),
				inOneof(0, field("and_constraints", 3, typeMessage, pkg+"DynamicParameterConstraints.ConstraintList")),
				inOneof(0, field("not_constraints", 4, typeMessage, pkg+"DynamicParameterConstraints")),
			},
			OneofDecl: oneof("type"),
			NestedType: []*descriptorpb.DescriptorProto{{
				Name: proto.String("SingleConstraint"),
				Field: []*descriptorpb.FieldDescriptorProto{
					field("key", 1, typeString, ""),
					inOneof(0, field("value", 2, typeString, "")),
					inOneof(0, field("exists", 3, typeMessage, pkg+"DynamicParameterConstraints.SingleConstraint.Exists")),
				},
				OneofDecl:  oneof("constraint_type"),
				NestedType: []*descriptorpb.DescriptorProto{{Name: proto.String("Exists")}},
			}, {
				Name:  proto.String("ConstraintList"),
				Field: []*descriptorpb.FieldDescriptorProto{repeated("constraints", 1, typeMessage, pkg+"DynamicParameterConstraints")},
			}},
		}},
	}
}
