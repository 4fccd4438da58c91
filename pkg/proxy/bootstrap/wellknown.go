package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// anyFullName is the type of every typed_config field.
const anyFullName protoreflect.FullName = "google.protobuf.Any"

// wellKnownJSON lists the google.protobuf types whose JSON form is not an
// object of their fields, and what that form is. It is an immutable table.
var wellKnownJSON = map[protoreflect.FullName]wellKnownForm{
	"google.protobuf.Any":         formAny,
	"google.protobuf.Struct":      formFree,
	"google.protobuf.Value":       formFree,
	"google.protobuf.ListValue":   formFree,
	"google.protobuf.Empty":       formScalar,
	"google.protobuf.Duration":    formScalar,
	"google.protobuf.Timestamp":   formScalar,
	"google.protobuf.FieldMask":   formScalar,
	"google.protobuf.BoolValue":   formScalar,
	"google.protobuf.BytesValue":  formScalar,
	"google.protobuf.DoubleValue": formScalar,
	"google.protobuf.FloatValue":  formScalar,
	"google.protobuf.Int32Value":  formScalar,
	"google.protobuf.Int64Value":  formScalar,
	"google.protobuf.StringValue": formScalar,
	"google.protobuf.UInt32Value": formScalar,
	"google.protobuf.UInt64Value": formScalar,
}

// wellKnownForm is the shape of a well-known type's JSON form.
type wellKnownForm int

const (
	// formAny is an object with "@type".
	formAny wellKnownForm = iota + 1
	// formFree is arbitrary JSON (Struct, Value, ListValue): nothing in it
	// can be an unknown field.
	formFree
	// formScalar is a single value checked as a whole (Empty's {} included).
	formScalar
)

// hasSpecialJSON reports whether name's JSON form is not a plain object of
// its fields; inside an Any, such a type sits under "value".
func hasSpecialJSON(name protoreflect.FullName) bool {
	_, ok := wellKnownJSON[name]
	return ok
}

// isFreeFormJSON reports whether name's JSON form is arbitrary JSON.
func isFreeFormJSON(name protoreflect.FullName) bool {
	return wellKnownJSON[name] == formFree
}

// hasScalarJSON reports whether name's JSON form is one value checked whole.
func hasScalarJSON(name protoreflect.FullName) bool {
	return wellKnownJSON[name] == formScalar
}

// isWellKnown reports whether name is a google.protobuf type: a value with
// no configuration fields of its own, which the support check treats as a
// leaf.
func isWellKnown(name protoreflect.FullName) bool {
	return name.Parent() == "google.protobuf"
}
