package tap

import (
	"fmt"
	"os"

	tapv3 "github.com/envoyproxy/go-control-plane/envoy/config/tap/v3"
	datatapv3 "github.com/envoyproxy/go-control-plane/envoy/data/tap/v3"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/admin"
)

// fileSink is file_per_tap: each trace in a file of its own,
// <path_prefix>_<trace id><extension>, as Envoy names them; the segments
// of a streamed trace follow one another in its file.
type fileSink struct {
	prefix string
	format tapv3.OutputSink_Format
}

func newFileSink(prefix string, format tapv3.OutputSink_Format) *fileSink {
	return &fileSink{prefix: prefix, format: format}
}

// Submit implements Sink. A trace that cannot be written is lost, as a
// failed write is in Envoy; the request is never held up.
func (f *fileSink) Submit(w *datatapv3.TraceWrapper, id uint64) {
	b, ext, err := encode(w, f.format)
	if err != nil {
		return
	}
	out, err := os.OpenFile(fmt.Sprintf("%s_%d%s", f.prefix, id, ext), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	_, _ = out.Write(b)
	_ = out.Close()
}

// encode renders w in format, with the file extension Envoy gives it:
// pretty JSON (.json), the binary message (.pb), the binary message after
// its varint length (.pb_length_delimited, so that the segments of a
// streamed trace can be read back one by one) or text format (.pb_text).
func encode(w *datatapv3.TraceWrapper, format tapv3.OutputSink_Format) ([]byte, string, error) {
	switch format {
	case tapv3.OutputSink_PROTO_BINARY:
		b, err := proto.Marshal(w)
		return b, ".pb", err
	case tapv3.OutputSink_PROTO_BINARY_LENGTH_DELIMITED:
		b, err := proto.Marshal(w)
		return append(protowire.AppendVarint(nil, uint64(len(b))), b...), ".pb_length_delimited", err
	case tapv3.OutputSink_PROTO_TEXT:
		b, err := prototext.MarshalOptions{Multiline: true}.Marshal(w)
		return b, ".pb_text", err
	}
	b, err := admin.MarshalProto(w, true)
	return b, ".json", err
}
