package bootstrap

import (
	"encoding/json"
	"fmt"

	udpatypev1 "github.com/cncf/xds/go/udpa/type/v1"
	xdstypev3 "github.com/cncf/xds/go/xds/type/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
)

// The two TypedStruct messages: an extension's configuration written as a
// Struct, with the type it stands for.
var typedStructNames = map[protoreflect.FullName]bool{
	proto.MessageName(&udpatypev1.TypedStruct{}): true,
	proto.MessageName(&xdstypev3.TypedStruct{}):  true,
}

// isTypedStruct reports whether name is one of the TypedStruct messages.
func isTypedStruct(name protoreflect.FullName) bool { return typedStructNames[name] }

// unwrapTypedStruct converts the encoded TypedStruct raw into the message
// it stands for: its type_url names the type, its value holds the fields
// in their JSON form. The fields are checked as any JSON configuration is,
// with their paths below path. It returns the message type and its
// encoding, or nil when problems were reported to r; the error is for a
// TypedStruct that cannot be read at all.
func unwrapTypedStruct(raw []byte, path string, r *decodeReport, depth int) (protoreflect.MessageType, []byte, error) {
	var (
		typeURL string
		value   *structpb.Struct
	)
	// The two messages have the same fields, so one decodes as the
	// other.
	var ts xdstypev3.TypedStruct
	if err := proto.Unmarshal(raw, &ts); err != nil {
		return nil, nil, fieldErrorf(path, "invalid TypedStruct: %v", err)
	}
	typeURL, value = ts.GetTypeUrl(), ts.GetValue()
	if typeURL == "" {
		r.fail(childPath(path, "type_url"), "required: the type the TypedStruct stands for")
		return nil, nil, nil
	}
	mt, err := r.resolver().FindMessageByURL(typeURL)
	if err != nil {
		r.fail(childPath(path, "type_url"), "unknown type %q", typeURL)
		return nil, nil, nil
	}
	js, err := protojson.Marshal(value)
	if err != nil {
		return nil, nil, fieldErrorf(childPath(path, "value"), "re-encode: %v", err)
	}
	tree, err := parseJSONTree(js)
	if err != nil {
		return nil, nil, fieldErrorf(childPath(path, "value"), "%v", err)
	}
	if tree == nil {
		tree = map[string]any{}
	}
	before := len(r.errs)
	w := jsonWalker{r: r}
	w.message(mt.Descriptor(), tree, childPath(path, "value"), depth+1)
	if len(r.errs) > before {
		return nil, nil, nil
	}
	if w.rewrote {
		if js, err = json.Marshal(tree); err != nil {
			return nil, nil, fieldErrorf(childPath(path, "value"), "re-encode: %v", err)
		}
	}
	inner := mt.New().Interface()
	if err := (protojson.UnmarshalOptions{DiscardUnknown: r.allowUnknown, Resolver: r.resolver()}).Unmarshal(js, inner); err != nil {
		return nil, nil, fieldErrorf(childPath(path, "value"), "decode %s: %v", mt.Descriptor().FullName(), err)
	}
	out, err := proto.MarshalOptions{Deterministic: true}.Marshal(inner)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: re-encode %s: %w", path, mt.Descriptor().FullName(), err)
	}
	return mt, out, nil
}
