package admin

import (
	udpaannotations "github.com/cncf/xds/go/udpa/annotations"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/structpb"
)

// redactedText replaces the value of every sensitive string and bytes
// field in /config_dump.
const redactedText = "[redacted]"

// typedStructNames are the messages that carry configuration of another
// type as JSON (a Struct) beside its type URL.
var typedStructNames = map[protoreflect.FullName]bool{
	"xds.type.v3.TypedStruct":  true,
	"udpa.type.v1.TypedStruct": true,
}

// redact hides secrets in msg before it is dumped, as Envoy's
// MessageUtil::redact does: every field annotated
// (udpa.annotations.sensitive), such as a TLS certificate's private_key and
// password, and everything below such a field, loses its value: strings and
// bytes read "[redacted]", other scalars are cleared. Configuration packed
// in an Any or a TypedStruct is unpacked, redacted and packed again, when
// its type is linked into the binary; configuration of an unknown type, or
// in an untyped Struct, cannot be redacted.
func redact(msg protoreflect.Message) {
	redactMessage(msg, false)
}

func redactMessage(msg protoreflect.Message, sensitive bool) {
	switch name := msg.Descriptor().FullName(); {
	case name == anyFullName:
		if redactAny(msg, sensitive) {
			return
		}
	case typedStructNames[name]:
		if redactTypedStruct(msg, sensitive) {
			return
		}
	}
	fields := msg.Descriptor().Fields()
	for i := range fields.Len() {
		redactField(msg, fields.Get(i), sensitive)
	}
}

// redactField redacts one field of msg; sensitive says an ancestor field
// was sensitive.
func redactField(msg protoreflect.Message, fd protoreflect.FieldDescriptor, sensitive bool) {
	sensitive = sensitive || isSensitive(fd)
	switch {
	case fd.IsMap():
		if !msg.Has(fd) {
			return
		}
		m := msg.Mutable(fd).Map()
		valueFD := fd.MapValue()
		m.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
			switch {
			case valueFD.Message() != nil:
				redactMessage(v.Message(), sensitive)
			case sensitive && isText(valueFD):
				m.Set(k, redactedValue(valueFD))
			case sensitive:
				m.Clear(k)
			}
			return true
		})
	case fd.Message() != nil && fd.IsList():
		if !msg.Has(fd) {
			return
		}
		l := msg.Mutable(fd).List()
		for i := range l.Len() {
			redactMessage(l.Get(i).Message(), sensitive)
		}
	case fd.Message() != nil:
		if msg.Has(fd) {
			redactMessage(msg.Mutable(fd).Message(), sensitive)
		}
	case !sensitive || !msg.Has(fd):
	case isText(fd) && fd.IsList():
		l := msg.Mutable(fd).List()
		for i := range l.Len() {
			l.Set(i, redactedValue(fd))
		}
	case isText(fd):
		msg.Set(fd, redactedValue(fd))
	default:
		msg.Clear(fd)
	}
}

// isSensitive reports the (udpa.annotations.sensitive) option of fd.
func isSensitive(fd protoreflect.FieldDescriptor) bool {
	opts, ok := fd.Options().(*descriptorpb.FieldOptions)
	if !ok || opts == nil {
		return false
	}
	on, _ := proto.GetExtension(opts, udpaannotations.E_Sensitive).(bool)
	return on
}

// isText reports whether fd holds strings or bytes, which redaction
// replaces rather than clears.
func isText(fd protoreflect.FieldDescriptor) bool {
	return fd.Kind() == protoreflect.StringKind || fd.Kind() == protoreflect.BytesKind
}

// redactedValue is "[redacted]" in fd's kind.
func redactedValue(fd protoreflect.FieldDescriptor) protoreflect.Value {
	if fd.Kind() == protoreflect.BytesKind {
		return protoreflect.ValueOfBytes([]byte(redactedText))
	}
	return protoreflect.ValueOfString(redactedText)
}

// redactAny redacts the message an Any holds. It reports false when that
// message's type is unknown, so that the Any is treated as an ordinary
// message.
func redactAny(msg protoreflect.Message, sensitive bool) bool {
	inner, err := unpackAny(msg)
	if err != nil {
		return false
	}
	redactMessage(inner.ProtoReflect(), sensitive)
	return repackAny(msg, inner) == nil
}

// redactTypedStruct redacts the configuration a TypedStruct holds as JSON,
// by converting it to its type and back. It reports false when the type is
// unknown or the JSON does not fit it.
func redactTypedStruct(msg protoreflect.Message, sensitive bool) bool {
	fields := msg.Descriptor().Fields()
	typeURL, valueFD := fields.ByName("type_url"), fields.ByName("value")
	if typeURL == nil || valueFD == nil || !msg.Has(valueFD) {
		return false
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByURL(msg.Get(typeURL).String())
	if err != nil {
		return false
	}
	value, ok := msg.Get(valueFD).Message().Interface().(*structpb.Struct)
	if !ok {
		return false
	}
	raw, err := protojson.Marshal(value)
	if err != nil {
		return false
	}
	inner := mt.New().Interface()
	if err := protojson.Unmarshal(raw, inner); err != nil {
		return false
	}
	redactMessage(inner.ProtoReflect(), sensitive)
	raw, err = protojson.MarshalOptions{UseProtoNames: true}.Marshal(inner)
	if err != nil {
		return false
	}
	redacted := &structpb.Struct{}
	if err := protojson.Unmarshal(raw, redacted); err != nil {
		return false
	}
	msg.Set(valueFD, protoreflect.ValueOfMessage(redacted.ProtoReflect()))
	return true
}
