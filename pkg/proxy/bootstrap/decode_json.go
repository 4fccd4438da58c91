package bootstrap

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// decodeJSON decodes a JSON configuration into m. protojson stops at the
// first problem and does not say where in the message tree it is, so the
// input is first walked as a generic JSON tree beside m's descriptor (see
// jsonWalker): that walk finds every unknown field, unresolvable
// typed_config type and badly typed value, with its full path. Only a clean
// tree is handed to protojson. Problems go to r; the returned error is for
// input that is not a JSON object at all. fromYAML adds YAML hints.
func decodeJSON(data []byte, m proto.Message, r *decodeReport, fromYAML bool) error {
	tree, err := parseJSONTree(data)
	if err != nil {
		return err
	}
	if tree == nil {
		// An empty document, or null: an empty configuration, as {} is.
		return nil
	}
	if _, ok := tree.(map[string]any); !ok {
		return fmt.Errorf("the configuration must be an object, not %s", jsonKind(tree))
	}
	w := jsonWalker{r: r, fromYAML: fromYAML}
	w.message(m.ProtoReflect().Descriptor(), tree, "", 0)
	if r.failed() {
		return nil
	}
	if w.rewrote {
		// The walk rewrote values (enum names in another case): decode
		// the tree it rewrote.
		if data, err = json.Marshal(tree); err != nil {
			return fmt.Errorf("re-encode: %w", err)
		}
	}
	opts := protojson.UnmarshalOptions{DiscardUnknown: r.allowUnknown, Resolver: r.resolver()}
	if err := opts.Unmarshal(data, m); err != nil {
		// The walk should have caught everything protojson refuses; this
		// keeps anything it missed from being lost.
		return fmt.Errorf("decode: %w", err)
	}
	return nil
}

// parseJSONTree decodes data into maps, slices and json.Numbers (numbers
// stay exact so they can be re-checked with protojson's own rules). Syntax
// errors carry the line and column of the problem.
func parseJSONTree(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, jsonSyntaxError(data, err)
	}
	end := int(dec.InputOffset())
	if rest := bytes.TrimLeft(data[end:], " \t\r\n"); len(rest) > 0 {
		line, col := lineColumn(data, len(data)-len(rest)+1)
		return nil, fmt.Errorf("json: line %d, column %d: unexpected data after the top-level value", line, col)
	}
	return tree, nil
}

// jsonSyntaxError adds the line and column to encoding/json's errors, which
// only carry a byte offset.
func jsonSyntaxError(data []byte, err error) error {
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		line, col := lineColumn(data, int(syntax.Offset))
		return fmt.Errorf("json: line %d, column %d: %w", line, col, err)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("json: unexpected end of input: %w", err)
	}
	return fmt.Errorf("json: %w", err)
}

// lineColumn gives the 1-based line and column of the byte that ends at
// offset (encoding/json's offsets count the offending byte as read).
func lineColumn(data []byte, offset int) (line, col int) {
	offset = min(max(offset-1, 0), len(data))
	before := data[:offset]
	line = 1 + bytes.Count(before, []byte{'\n'})
	col = offset - bytes.LastIndexByte(before, '\n')
	return line, col
}
