package bootstrap

import (
	"fmt"
	"path/filepath"
	"strings"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"
)

// format is an encoding of the configuration.
type format int

const (
	formatYAML format = iota + 1
	formatJSON
	formatText
	formatBinary
)

// supportedExtensions is listed in the error for any other file extension.
const supportedExtensions = ".yaml, .yml, .json, .pb (binary proto) and .pb_text (text proto)"

// formatOf chooses the format of a configuration file by its extension, as
// Envoy does (case aside: CONFIG.YAML is YAML too).
func formatOf(path string) (format, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".yaml", ".yml":
		return formatYAML, nil
	case ".json":
		return formatJSON, nil
	case ".pb_text":
		return formatText, nil
	case ".pb":
		return formatBinary, nil
	case "":
		return 0, fmt.Errorf("configuration file %q has no extension; supported extensions are %s", path, supportedExtensions)
	default:
		return 0, fmt.Errorf("unsupported configuration file extension %q in %q; supported extensions are %s", ext, path, supportedExtensions)
	}
}

// decodeResult is one source's decoded Bootstrap.
type decodeResult struct {
	bootstrap *bootstrapv3.Bootstrap
	// unknown lists the paths of dropped unknown fields.
	unknown []string
	// errs are every problem found; bootstrap is nil when there are any.
	errs []error
	// stubbed are the Anys of unknown types, replaced by placeholders in
	// bootstrap, which is then partial: good only for finding the
	// configuration's other problems.
	stubbed []error
}

// decode decodes one configuration source. Problems are all collected.
func decode(f format, data []byte, allowUnknown bool) decodeResult {
	b := &bootstrapv3.Bootstrap{}
	unknown, errs, stubbed := decodeMessage(f, data, b, Decoder{AllowUnknown: allowUnknown})
	if len(errs) > 0 {
		return decodeResult{errs: append(errs, stubbed...)}
	}
	return decodeResult{bootstrap: b, unknown: unknown, stubbed: stubbed}
}

// decodeMessage decodes data in format f into m, which may be any message
// (the bootstrap, or a dynamic resource file), as d says. It returns the
// paths of the unknown fields it dropped (with d.AllowUnknown) or every
// problem found; m is only meaningful when there are none. stubbed are the
// Anys of unknown types replaced by placeholders (JSON and YAML only): m is
// then decoded but partial.
func decodeMessage(f format, data []byte, m proto.Message, d Decoder) (unknown []string, errs, stubbed []error) {
	r := &decodeReport{allowUnknown: d.AllowUnknown, types: d.Types}
	var err error
	switch f {
	case formatYAML:
		var js []byte
		// Strict: a key given twice is an error, not a silent override.
		if js, err = yaml.YAMLToJSONStrict(data); err == nil {
			err = decodeJSON(js, m, r, true)
		}
	case formatJSON:
		err = decodeJSON(data, m, r, false)
	case formatText:
		err = decodeText(data, m, r)
	case formatBinary:
		err = decodeBinary(data, m, r)
	default:
		err = fmt.Errorf("unknown configuration format %d", f)
	}
	if err == nil && !r.failed() && f != formatBinary {
		// JSON and text may still carry an Any as raw bytes.
		checkDecoded(m.ProtoReflect(), "", r, 0)
	}
	if err != nil {
		r.errs = append(r.errs, err)
	}
	if r.failed() {
		return nil, r.errs, r.stubbed
	}
	return r.unknown, nil, r.stubbed
}
