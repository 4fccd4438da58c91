package bootstrap

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
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
// values used, inside typed_config values too, in declaration order. It
// works out what each type can hold afresh: a caller that scans often
// keeps a DeprecatedScanner.
func Deprecated(m proto.Message) []DeprecatedField {
	return new(DeprecatedScanner).Scan(m, "")
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
