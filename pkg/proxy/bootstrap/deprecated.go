package bootstrap

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/anypb"
)

// DeprecatedField is a field of a configuration that the v3 API marks
// deprecated: still accepted, as Envoy accepts it, with a warning.
type DeprecatedField struct {
	// Path is where it is set ("admin.access_log_path").
	Path string
	// Name is its full name, as Envoy's warning gives it
	// ("envoy.config.bootstrap.v3.Admin.access_log_path").
	Name protoreflect.FullName
	// File is the .proto file that declares it.
	File string
}

// Deprecated lists the deprecated fields set in m, and the deprecated enum
// values used, inside typed_config values too, in declaration order.
func Deprecated(m proto.Message) []DeprecatedField {
	var out []DeprecatedField
	deprecatedIn(m.ProtoReflect(), "", &out, 0)
	return out
}

// deprecatedIn walks m, found at path.
func deprecatedIn(m protoreflect.Message, path string, out *[]DeprecatedField, depth int) {
	if depth > maxDepth {
		return
	}
	if a, ok := m.Interface().(*anypb.Any); ok {
		if inner, err := a.UnmarshalNew(); err == nil {
			deprecatedIn(inner.ProtoReflect(), path, out, depth+1)
		}
		return
	}
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if !m.Has(fd) {
			continue
		}
		p := childPath(path, string(fd.Name()))
		if isDeprecated(fd.Options()) {
			*out = append(*out, DeprecatedField{Path: p, Name: fd.FullName(), File: fd.ParentFile().Path()})
		}
		v := m.Get(fd)
		switch {
		case fd.IsList():
			list := v.List()
			for j := range list.Len() {
				deprecatedValue(fd, list.Get(j), indexPath(p, j), out, depth)
			}
		case fd.IsMap():
			mp := v.Map()
			for _, k := range sortedMapKeys(mp) {
				deprecatedValue(fd.MapValue(), mp.Get(k), mapKeyPath(p, k), out, depth)
			}
		default:
			deprecatedValue(fd, v, p, out, depth)
		}
	}
}

// deprecatedValue looks at one value of fd: a deprecated enum value, or a
// message to walk.
func deprecatedValue(fd protoreflect.FieldDescriptor, v protoreflect.Value, path string, out *[]DeprecatedField, depth int) {
	switch fd.Kind() {
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil && isDeprecated(ev.Options()) {
			*out = append(*out, DeprecatedField{Path: path, Name: ev.FullName(), File: ev.ParentFile().Path()})
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		if !isWellKnown(fd.Message().FullName()) || fd.Message().FullName() == anyFullName {
			deprecatedIn(v.Message(), path, out, depth+1)
		}
	}
}

// isDeprecated reports whether descriptor options say deprecated.
func isDeprecated(opts proto.Message) bool {
	switch o := opts.(type) {
	case *descriptorpb.FieldOptions:
		return o.GetDeprecated()
	case *descriptorpb.EnumValueOptions:
		return o.GetDeprecated()
	}
	return false
}
