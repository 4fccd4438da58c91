package bootstrap

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// DecodeWire decodes one message's wire form into m and checks it as a
// binary file's embedded messages are checked, reporting its problems
// under path; depth is m's nesting in the message path starts from (it
// counts toward the same limit). A discovery response's resources are
// decoded with it straight from their Any values, once.
//
// The reflective check looks for unknown fields and Any values only, so
// when one pass over the wire form against m's descriptor finds neither
// (every field number known, with its wire type, down to the innermost
// message, and no Any), the check is skipped: it would find nothing.
func (d Decoder) DecodeWire(path string, depth int, data []byte, m proto.Message) (unknown []string, err error) {
	r := &decodeReport{allowUnknown: d.AllowUnknown, types: d.Types}
	if err := (proto.UnmarshalOptions{Resolver: r.resolver()}).Unmarshal(data, m); err != nil {
		return nil, fmt.Errorf("%s: decode: %w", path, err)
	}
	if plainWire(data, m.ProtoReflect().Descriptor(), depth) {
		return nil, nil
	}
	checkDecoded(m.ProtoReflect(), path, r, depth)
	if errs := append(r.errs, r.stubbed...); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return uniquePaths(r.unknown), nil
}

// plainWire reports whether b, the wire form of a message of type md, has
// nothing checkDecoded would look at: no field the descriptor lacks or
// whose wire type does not fit it (the decoder keeps both as unknown
// fields), no value of a closed enum (an unknown one is kept the same
// way), no Any, no group, at any depth up to maxDepth. False only means
// the full check must run.
func plainWire(b []byte, md protoreflect.MessageDescriptor, depth int) bool {
	if depth > maxDepth {
		return false
	}
	fields := md.Fields()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		fd := fields.ByNumber(num)
		if fd == nil || !wireTypeFits(fd, typ) {
			return false
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return false
		}
		if inner := fd.Message(); inner != nil {
			if inner.FullName() == anyFullName {
				return false
			}
			v, _ := protowire.ConsumeBytes(b[:n])
			if !plainWire(v, inner, depth+1) {
				return false
			}
		}
		b = b[n:]
	}
	return true
}

// wireTypeFits reports whether a field of fd's kind decodes from wire type
// typ (packed or not for repeated scalars), and is not a closed enum,
// whose unknown values the decoder keeps as unknown fields.
func wireTypeFits(fd protoreflect.FieldDescriptor, typ protowire.Type) bool {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.StringKind, protoreflect.BytesKind:
		return typ == protowire.BytesType
	case protoreflect.GroupKind:
		return false
	case protoreflect.EnumKind:
		if fd.ParentFile().Syntax() != protoreflect.Proto3 {
			return false
		}
	}
	if typ == protowire.BytesType && fd.IsList() {
		return true // packed
	}
	switch fd.Kind() {
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		return typ == protowire.Fixed32Type
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		return typ == protowire.Fixed64Type
	default:
		return typ == protowire.VarintType
	}
}

// DecodePlain decodes data, a message's wire form, into m when the form is
// plain: nothing DecodeWire's check would find (see plainWire), so that
// the result is DecodeWire's. False otherwise (or when data does not
// decode), m then being unspecified; the caller takes DecodeWire's way.
// depth is m's nesting, as DecodeWire's.
func (d Decoder) DecodePlain(depth int, data []byte, m proto.Message) bool {
	if !plainWire(data, m.ProtoReflect().Descriptor(), depth) {
		return false
	}
	resolver := d.Types
	if resolver == nil {
		return proto.Unmarshal(data, m) == nil
	}
	return proto.UnmarshalOptions{Resolver: resolver}.Unmarshal(data, m) == nil
}
