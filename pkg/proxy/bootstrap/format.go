package bootstrap

import (
	"fmt"
	"path/filepath"
	"strings"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
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
}

// decode decodes one configuration source. Problems are all collected.
func decode(f format, data []byte, allowUnknown bool) decodeResult {
	b := &bootstrapv3.Bootstrap{}
	r := &decodeReport{allowUnknown: allowUnknown}
	var err error
	switch f {
	case formatYAML:
		var js []byte
		// Strict: a key given twice is an error, not a silent override.
		if js, err = yaml.YAMLToJSONStrict(data); err == nil {
			err = decodeJSON(js, b, r, true)
		}
	case formatJSON:
		err = decodeJSON(data, b, r, false)
	case formatText:
		err = decodeText(data, b, r)
	case formatBinary:
		err = decodeBinary(data, b, r)
	default:
		err = fmt.Errorf("unknown configuration format %d", f)
	}
	if err == nil && !r.failed() && f != formatBinary {
		// JSON and text may still carry an Any as raw bytes.
		checkDecoded(b.ProtoReflect(), "", r, 0)
	}
	if err != nil {
		r.errs = append(r.errs, err)
	}
	if r.failed() {
		return decodeResult{errs: r.errs}
	}
	return decodeResult{bootstrap: b, unknown: r.unknown}
}
