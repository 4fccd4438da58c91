package grpcjsontranscoder

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	transcoderv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/grpc_json_transcoder/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// errUnknownParameter marks a binding whose field path does not resolve:
// a query parameter the message has no field for.
var errUnknownParameter = errors.New("unknown query parameter")

// resolvedBinding is a binding whose field path resolved.
type resolvedBinding struct {
	fds   []protoreflect.FieldDescriptor
	value string
}

// resolvedBindings are a request's bindings once resolved in its type:
// the fields they set, and the query parameters the type has no field
// for, kept with capture_unknown_query_parameters.
type resolvedBindings struct {
	fields  []resolvedBinding
	unknown *transcoderv3.UnknownQueryParams
}

// resolveBindings resolves the bindings' field paths in the request
// type. An unknown one is captured with capture_unknown_query_parameters,
// left out with ignore_unknown_query_parameters, else it is
// errUnknownParameter.
func (t *transcoder) resolveBindings(in protoreflect.MessageDescriptor, bs []binding) (resolvedBindings, error) {
	out := resolvedBindings{fields: make([]resolvedBinding, 0, len(bs))}
	for _, b := range bs {
		fds, err := resolvePath(in, b.fieldPath)
		if err == nil {
			last := fds[len(fds)-1]
			if last.IsMap() || (last.Message() != nil && !isScalarMessage(last.Message())) {
				err = fmt.Errorf("field %q cannot take a value from the URL", strings.Join(b.fieldPath, "."))
			}
		}
		if err != nil {
			if t.captureUnknownQueryParameters {
				if out.unknown == nil {
					out.unknown = &transcoderv3.UnknownQueryParams{Key: map[string]*transcoderv3.UnknownQueryParams_Values{}}
				}
				name := strings.Join(b.fieldPath, ".")
				v := out.unknown.Key[name]
				if v == nil {
					v = &transcoderv3.UnknownQueryParams_Values{}
					out.unknown.Key[name] = v
				}
				v.Values = append(v.Values, b.value)
				continue
			}
			if t.ignoreUnknownQueryParameters {
				continue
			}
			return resolvedBindings{}, fmt.Errorf("%w: %s", errUnknownParameter, err.Error())
		}
		out.fields = append(out.fields, resolvedBinding{fds: fds, value: b.value})
	}
	return out, nil
}

// isScalarMessage reports a well-known message whose JSON form is a
// string or a number, which a URL value can give.
func isScalarMessage(md protoreflect.MessageDescriptor) bool {
	switch md.FullName() {
	case "google.protobuf.Timestamp", "google.protobuf.Duration", "google.protobuf.FieldMask",
		"google.protobuf.DoubleValue", "google.protobuf.FloatValue", "google.protobuf.Int64Value",
		"google.protobuf.UInt64Value", "google.protobuf.Int32Value", "google.protobuf.UInt32Value",
		"google.protobuf.BoolValue", "google.protobuf.StringValue", "google.protobuf.BytesValue":
		return true
	}
	return false
}

// requestError is a request the filter refuses: status and message, and
// the details' code name (Envoy's "{INVALID_ARGUMENT}").
type requestError struct {
	status int
	code   string
	msg    string
}

func badRequest(format string, a ...any) *requestError {
	return &requestError{status: 400, code: "INVALID_ARGUMENT", msg: fmt.Sprintf(format, a...)}
}

// buildRequest builds the gRPC request body: the message(s) from the
// JSON body (or the raw body for google.api.HttpBody), the bindings on
// top, each framed.
func (t *transcoder) buildRequest(r *rule, bs resolvedBindings, body []byte, contentType string) ([]byte, *requestError) {
	in := r.method.desc.Input()
	var msgs []*dynamicpb.Message
	switch {
	case r.httpBody:
		msgs = t.httpBodyMessages(r, body, contentType, bs.unknown)
	case r.method.desc.IsStreamingClient() && r.body != "":
		var items []json.RawMessage
		if len(bytes.TrimSpace(body)) > 0 {
			if err := json.Unmarshal(body, &items); err != nil {
				return nil, badRequest("Unexpected token.\n%s", err.Error())
			}
		}
		for _, item := range items {
			m, rerr := t.bodyMessage(r, in, item)
			if rerr != nil {
				return nil, rerr
			}
			msgs = append(msgs, m)
		}
	default:
		var m *dynamicpb.Message
		if r.body == "" {
			m = dynamicpb.NewMessage(in)
		} else {
			var rerr *requestError
			if m, rerr = t.bodyMessage(r, in, body); rerr != nil {
				return nil, rerr
			}
		}
		msgs = append(msgs, m)
	}
	var out []byte
	for _, m := range msgs {
		if err := t.applyBindings(m, bs.fields); err != nil {
			return nil, err
		}
		b, err := proto.Marshal(m)
		if err != nil {
			return nil, badRequest("%s", err.Error())
		}
		out = appendFrame(out, b)
	}
	return out, nil
}

// appendFrame appends a gRPC message frame (uncompressed) of b.
func appendFrame(out, b []byte) []byte {
	var h [5]byte
	binary.BigEndian.PutUint32(h[1:], uint32(len(b)))
	return append(append(out, h[:]...), b...)
}

// maxStreamedPiece bounds the messages a client-streaming HttpBody
// request is cut into, as Envoy's MaxStreamedPieceSize (1 MiB), below
// gRPC's default 4 MiB message limit.
const maxStreamedPiece = 1 << 20

// httpBodyMessages puts the raw body into google.api.HttpBody messages:
// one, or pieces of it for a client-streaming method; each carries the
// captured unknown query parameters as an extension, as Envoy's.
func (t *transcoder) httpBodyMessages(r *rule, body []byte, contentType string, unknown *transcoderv3.UnknownQueryParams) []*dynamicpb.Message {
	var ext *anypb.Any
	if unknown != nil {
		ext, _ = anypb.New(unknown)
	}
	in := r.method.desc.Input()
	pieces := [][]byte{body}
	if r.method.desc.IsStreamingClient() && len(body) > maxStreamedPiece {
		pieces = nil
		for len(body) > 0 {
			n := min(len(body), maxStreamedPiece)
			pieces, body = append(pieces, body[:n]), body[n:]
		}
	}
	msgs := make([]*dynamicpb.Message, 0, len(pieces))
	for i, p := range pieces {
		m := dynamicpb.NewMessage(in)
		hb := m.ProtoReflect()
		if r.bodyPath != nil {
			hb = mutablePath(m, r.bodyPath)
		}
		fields := hb.Descriptor().Fields()
		if i == 0 && contentType != "" {
			hb.Set(fields.ByName("content_type"), protoreflect.ValueOfString(contentType))
		}
		hb.Set(fields.ByName("data"), protoreflect.ValueOfBytes(p))
		if ext != nil {
			exts := hb.Mutable(fields.ByName("extensions")).List()
			// The extension's type is the proxy's own: copied into
			// the dynamic Any of the set's HttpBody through its bytes.
			el := exts.NewElement()
			if b, err := proto.Marshal(ext); err == nil && proto.Unmarshal(b, el.Message().Interface()) == nil {
				exts.Append(el)
			}
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// mutablePath returns the message at the end of a path of singular
// message fields, made as needed.
func mutablePath(m protoreflect.ProtoMessage, fds []protoreflect.FieldDescriptor) protoreflect.Message {
	cur := m.ProtoReflect()
	for _, fd := range fds {
		cur = cur.Mutable(fd).Message()
	}
	return cur
}

// bodyMessage parses a JSON body into the request message, or into its
// body field.
func (t *transcoder) bodyMessage(r *rule, in protoreflect.MessageDescriptor, body []byte) (*dynamicpb.Message, *requestError) {
	m := dynamicpb.NewMessage(in)
	if len(bytes.TrimSpace(body)) == 0 {
		return m, nil
	}
	if t.caseInsensitiveEnums {
		body = fixEnumCase(body, in, r.bodyPath)
	}
	if r.bodyPath != nil {
		// The body is the value of the body field: wrapped in the
		// objects of its path, it parses as the whole message.
		var b bytes.Buffer
		for _, fd := range r.bodyPath {
			b.WriteString(`{"`)
			b.WriteString(string(fd.Name()))
			b.WriteString(`":`)
		}
		b.Write(body)
		for range r.bodyPath {
			b.WriteByte('}')
		}
		body = b.Bytes()
	}
	opts := protojson.UnmarshalOptions{Resolver: t.types}
	if err := opts.Unmarshal(body, m); err != nil {
		return nil, badRequest("%s", jsonError(err))
	}
	return m, nil
}

// jsonError is a JSON parse error without the library's prefix.
func jsonError(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "proto: ")
	s = strings.TrimPrefix(s, "proto:\u00a0")
	return s
}

// applyBindings sets the bound fields on m. A field the body set keeps
// the body's value, as in Envoy ("the body overrides the binding"); with
// reject_binding_body_field_collisions a different value is refused.
func (t *transcoder) applyBindings(m *dynamicpb.Message, bs []resolvedBinding) *requestError {
	var fromBody protoreflect.Message
	if len(bs) > 0 {
		fromBody = proto.Clone(m).ProtoReflect()
	}
	for _, b := range bs {
		last := b.fds[len(b.fds)-1]
		if setInBody(fromBody, b.fds) {
			if t.rejectCollisions && !t.sameValue(fromBody, b) {
				return badRequest("The binding value %s of the field %s is conflicting with the value %s in the body.",
					b.value, fieldPathName(b.fds), bodyValue(fromBody, b.fds))
			}
			continue
		}
		parent := m.ProtoReflect()
		for _, fd := range b.fds[:len(b.fds)-1] {
			parent = parent.Mutable(fd).Message()
		}
		v, err := t.parseValue(parent, last, b.value)
		if err != nil {
			return badRequest("%s", err.Error())
		}
		if last.IsList() {
			parent.Mutable(last).List().Append(v)
		} else {
			parent.Set(last, v)
		}
	}
	return nil
}

// setInBody reports whether the body set the field at fds.
func setInBody(m protoreflect.Message, fds []protoreflect.FieldDescriptor) bool {
	if m == nil {
		return false
	}
	for i, fd := range fds {
		if !m.Has(fd) {
			return false
		}
		if i < len(fds)-1 {
			m = m.Get(fd).Message()
		}
	}
	return true
}

// bodyValue is the body's value at fds, as text.
func bodyValue(m protoreflect.Message, fds []protoreflect.FieldDescriptor) string {
	for _, fd := range fds[:len(fds)-1] {
		m = m.Get(fd).Message()
	}
	last := fds[len(fds)-1]
	v := m.Get(last)
	if last.Kind() == protoreflect.EnumKind && !last.IsList() {
		if ev := last.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
	}
	return v.String()
}

// sameValue reports whether the binding gives the value the body has.
func (t *transcoder) sameValue(body protoreflect.Message, b resolvedBinding) bool {
	parent := body
	for _, fd := range b.fds[:len(b.fds)-1] {
		parent = parent.Get(fd).Message()
	}
	last := b.fds[len(b.fds)-1]
	v, err := t.parseValue(parent, last, b.value)
	if err != nil {
		return false
	}
	if last.IsList() {
		l := parent.Get(last).List()
		for i := range l.Len() {
			if l.Get(i).Equal(v) {
				return true
			}
		}
		return false
	}
	return parent.Get(last).Equal(v)
}

// fieldPathName is a field path's dotted proto names.
func fieldPathName(fds []protoreflect.FieldDescriptor) string {
	names := make([]string, len(fds))
	for i, fd := range fds {
		names[i] = string(fd.Name())
	}
	return strings.Join(names, ".")
}

// parseValue converts a URL value to a value of field fd (an element of
// it, for a repeated field).
func (t *transcoder) parseValue(parent protoreflect.Message, fd protoreflect.FieldDescriptor, s string) (protoreflect.Value, error) {
	bad := func() (protoreflect.Value, error) {
		return protoreflect.Value{}, fmt.Errorf("invalid value %q for field %s of type %s", s, fd.FullName(), fd.Kind())
	}
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(s), nil
	case protoreflect.BytesKind:
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
			if b, err := enc.DecodeString(s); err == nil {
				return protoreflect.ValueOfBytes(b), nil
			}
		}
		return bad()
	case protoreflect.BoolKind:
		switch s {
		case "true", "True", "1":
			return protoreflect.ValueOfBool(true), nil
		case "false", "False", "0":
			return protoreflect.ValueOfBool(false), nil
		}
		return bad()
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return bad()
		}
		return protoreflect.ValueOfInt32(int32(n)), nil
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return bad()
		}
		return protoreflect.ValueOfInt64(n), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		n, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return bad()
		}
		return protoreflect.ValueOfUint32(uint32(n)), nil
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return bad()
		}
		return protoreflect.ValueOfUint64(n), nil
	case protoreflect.FloatKind:
		f, err := strconv.ParseFloat(s, 32)
		if err != nil {
			return bad()
		}
		return protoreflect.ValueOfFloat32(float32(f)), nil
	case protoreflect.DoubleKind:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return bad()
		}
		return protoreflect.ValueOfFloat64(f), nil
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		if ev := vals.ByName(protoreflect.Name(s)); ev != nil {
			return protoreflect.ValueOfEnum(ev.Number()), nil
		}
		if t.caseInsensitiveEnums {
			for i := range vals.Len() {
				if strings.EqualFold(string(vals.Get(i).Name()), s) {
					return protoreflect.ValueOfEnum(vals.Get(i).Number()), nil
				}
			}
		}
		if n, err := strconv.ParseInt(s, 10, 32); err == nil {
			return protoreflect.ValueOfEnum(protoreflect.EnumNumber(n)), nil
		}
		return bad()
	case protoreflect.MessageKind, protoreflect.GroupKind:
		var v protoreflect.Value
		if fd.IsList() {
			v = parent.Mutable(fd).List().NewElement()
		} else {
			v = parent.NewField(fd)
		}
		msg := v.Message()
		if vf := msg.Descriptor().Fields().ByName("value"); vf != nil && strings.HasSuffix(string(msg.Descriptor().FullName()), "Value") {
			inner, err := t.parseValue(msg, vf, s)
			if err != nil {
				return inner, err
			}
			msg.Set(vf, inner)
			return v, nil
		}
		quoted, _ := json.Marshal(s)
		if err := (protojson.UnmarshalOptions{Resolver: t.types}).Unmarshal(quoted, msg.Interface()); err != nil {
			return bad()
		}
		return v, nil
	}
	return bad()
}
