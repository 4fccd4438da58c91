package admin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// MarshalProto renders m the way Envoy's admin renders its envoy/admin/v3
// messages: proto (snake_case) field names, one space of indentation per
// level, `"key": value`, 64-bit integers as strings, enums by name, and a
// trailing newline; an empty message is "{}\n".
//
// alwaysPrint is Envoy's "always print primitive fields": zero scalars and
// empty lists are printed (unset messages still are not). Envoy turns it on
// for /server_info, /memory, /certs, /contention and /runtime, and off
// elsewhere (/clusters, /listeners, /config_dump, /init_dump).
func MarshalProto(m proto.Message, alwaysPrint bool) ([]byte, error) {
	compact, err := protojson.MarshalOptions{
		UseProtoNames:     true,
		EmitDefaultValues: alwaysPrint,
	}.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("render %s as JSON: %w", m.ProtoReflect().Descriptor().FullName(), err)
	}
	return indentJSON(compact)
}

// WriteProto writes MarshalProto's rendering of m to w. Nothing is written
// when rendering fails, so the caller can still answer with an error.
func WriteProto(w io.Writer, m proto.Message, alwaysPrint bool) error {
	b, err := MarshalProto(m, alwaysPrint)
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}

// indentJSON re-indents JSON to Envoy's layout. protojson deliberately varies
// its whitespace between builds so that nobody depends on it; json.Indent
// discards that whitespace and lays the document out deterministically, and
// keeps empty arrays and objects as [] and {}.
func indentJSON(compact []byte) ([]byte, error) {
	var out bytes.Buffer
	out.Grow(len(compact) + len(compact)/4)
	if err := json.Indent(&out, compact, "", " "); err != nil {
		return nil, fmt.Errorf("indent JSON: %w", err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}
