package bootstrap

import (
	"errors"
	"fmt"
	"os"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// TypeResolver finds the message types that Any type URLs name (and
// extensions), as protobuf's decoders take it; *protoregistry.Types
// satisfies it.
type TypeResolver interface {
	protoregistry.MessageTypeResolver
	protoregistry.ExtensionTypeResolver
}

// Decoder decodes any configuration message, not only the bootstrap, with
// exactly the rules, parsers and error texts the bootstrap is read with: a
// dynamic resource file (an envoy.service.discovery.v3.DiscoveryResponse)
// that reads as YAML here reads the same as a bootstrap fragment. The
// format comes from the file name's extension (.yaml, .yml, .json, .pb,
// .pb_text). The zero Decoder is strict and resolves the linked types.
type Decoder struct {
	// AllowUnknown drops unknown fields and returns their paths, each
	// once, so the caller can apply its own policy (warn, count, reject).
	// Without it an unknown field is an error naming its path
	// ("resources[0].foo: unknown field").
	AllowUnknown bool
	// Types resolves the type URLs of Any values (typed_config, resources).
	// Nil means every linked type (protoregistry.GlobalTypes). A resolver
	// is needed for types not linked in as generated code, such as the
	// discovery messages, whose generated package needs gRPC.
	Types TypeResolver
}

// DecodeFile reads the file at path and decodes it into m. Every problem is
// reported, as errors.Join of *FieldError for located problems and plain
// errors for unreadable or unparsable input; m is only meaningful when the
// error is nil.
func (d Decoder) DecodeFile(path string, m proto.Message) (unknown []string, err error) {
	f, data, err := readSource(path)
	if err != nil {
		return nil, err
	}
	return d.decode(f, data, m)
}

// DecodeBytes is DecodeFile for data already read: path only chooses the
// format, by its extension. Fuzz targets feed it directly.
func (d Decoder) DecodeBytes(path string, data []byte, m proto.Message) (unknown []string, err error) {
	f, err := formatOf(path)
	if err != nil {
		return nil, err
	}
	return d.decode(f, data, m)
}

// DecodeFile decodes the file at path into m with the linked types; see
// Decoder. With allowUnknown, unknown fields are dropped and their paths
// returned; without, each is an error naming its path.
func DecodeFile(path string, m proto.Message, allowUnknown bool) (unknown []string, err error) {
	return Decoder{AllowUnknown: allowUnknown}.DecodeFile(path, m)
}

// DecodeBytes decodes data into m, choosing the format by path's extension;
// see DecodeFile.
func DecodeBytes(path string, data []byte, m proto.Message, allowUnknown bool) (unknown []string, err error) {
	return Decoder{AllowUnknown: allowUnknown}.DecodeBytes(path, data, m)
}

// decode decodes data in format f into m and joins the problems.
func (d Decoder) decode(f format, data []byte, m proto.Message) ([]string, error) {
	unknown, errs, stubbed := decodeMessage(f, data, m, d)
	// A resource file is all or nothing: a stubbed Any is an error too.
	if errs = append(errs, stubbed...); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return uniquePaths(unknown), nil
}

// uniquePaths keeps the first occurrence of each path, in order: callers
// warn once per path, and the decoders do not promise to meet a path once.
func uniquePaths(paths []string) []string {
	var out []string
	seen := make(map[string]bool, len(paths))
	for _, p := range paths {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// readSource reads a configuration file and chooses its format by its
// extension; the bootstrap and dynamic resource files share it, so both
// refuse the same files with the same messages.
func readSource(path string) (format, []byte, error) {
	f, err := formatOf(path)
	if err != nil {
		return 0, nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, nil, fmt.Errorf("read configuration: %w", err)
	}
	return f, data, nil
}
