package bootstrap

import (
	"errors"
	"fmt"
	"slices"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
)

// LoadOptions are the command line options that decide what Load reads.
type LoadOptions struct {
	// ConfigPath is --config-path: a .yaml, .yml, .json, .pb or .pb_text
	// file.
	ConfigPath string
	// ConfigYAML is --config-yaml: YAML (or JSON) merged over the file, or
	// the whole configuration when ConfigPath is empty.
	ConfigYAML string
	// BootstrapVersion is --bootstrap-version: 0 (unset) or 3.
	BootstrapVersion int
	// AllowUnknownStaticFields drops unknown fields instead of rejecting
	// them; Loaded.UnknownFields lists them.
	AllowUnknownStaticFields bool
	// ServiceCluster, ServiceNode and ServiceZone override node.cluster,
	// node.id and node.locality.zone when not empty.
	ServiceCluster, ServiceNode, ServiceZone string
}

// Loaded is a decoded configuration, not yet validated (see Validate).
type Loaded struct {
	// Bootstrap is the merged configuration.
	Bootstrap *bootstrapv3.Bootstrap
	// UnknownFields is, with AllowUnknownStaticFields, the path of every
	// unknown field that was dropped (each once, file first), e.g.
	// "static_resources.listeners[0].bar". The caller warns once for each
	// and counts them in server.static_unknown_fields.
	UnknownFields []string

	// stubbed are the Anys of unknown types Load replaced by
	// placeholders; see Problems.
	stubbed []error
}

// Problems is for a configuration Load returned with an error of Anys of
// unknown types only: the configuration cannot be used, but the rest of
// it was decoded, so its other problems are reported in the same run.
// It returns the unknown types (with what the table of extensions says of
// them), then what Validate finds elsewhere,
// without what the placeholders themselves cause.
func (l *Loaded) Problems(ext *extension.Registry) error {
	var errs []error
	for _, err := range l.stubbed {
		var ut *unknownTypeError
		if errors.As(err, &ut) {
			// Why the extension is missing, from the table of Envoy's
			// extensions, and where that table is.
			err = fmt.Errorf("%w%s", err, ext.Refusal(ut.typeURL, ut.name))
		}
		errs = append(errs, err)
	}
	for _, err := range validationErrors(l.Bootstrap, ext) {
		if !insideAny(err, l.stubbed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Version-related errors; their text is what the operator reads.
var (
	errBootstrapV2 = errors.New("bootstrap version 2 (the v2 API) is not supported; convert the configuration to the v3 API")
	errNoConfig    = errors.New("at least one of --config-path or --config-yaml should be non-empty")
)

// Load reads the configuration file and/or --config-yaml and merges them the
// way Envoy does: the YAML is decoded on its own and then merged over the
// file with proto.Merge, so its scalars win, its messages merge field by
// field, its repeated fields (listeners...) are appended and a oneof member
// it sets replaces the file's. The service overrides are applied last.
//
// Every problem in both sources is reported, as errors.Join of *FieldError
// for located problems (those from --config-yaml are prefixed with
// "--config-yaml: ") and plain errors for unreadable or unparsable input.
// When the only problems are Anys of types this build does not know, Load
// returns them and also the configuration decoded without them, which must
// not be used but gives Problems the rest of the file to check.
func Load(o LoadOptions) (*Loaded, error) {
	if err := checkBootstrapVersion(o.BootstrapVersion); err != nil {
		return nil, err
	}
	if o.ConfigPath == "" && o.ConfigYAML == "" {
		return nil, errNoConfig
	}
	var (
		sources []decodeResult
		errs    []error
		stubbed []error
	)
	if o.ConfigPath != "" {
		res, err := loadFile(o.ConfigPath, o.AllowUnknownStaticFields)
		if err != nil {
			// Still decode --config-yaml, to report its problems too.
			res.errs = []error{err}
		}
		errs = append(errs, res.errs...)
		stubbed = append(stubbed, res.stubbed...)
		sources = append(sources, res)
	}
	if o.ConfigYAML != "" {
		res := decode(formatYAML, []byte(o.ConfigYAML), o.AllowUnknownStaticFields)
		for _, err := range res.errs {
			errs = append(errs, fmt.Errorf("--config-yaml: %w", err))
		}
		for _, err := range res.stubbed {
			stubbed = append(stubbed, fmt.Errorf("--config-yaml: %w", err))
		}
		sources = append(sources, res)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	loaded := &Loaded{Bootstrap: &bootstrapv3.Bootstrap{}}
	for _, res := range sources {
		proto.Merge(loaded.Bootstrap, res.bootstrap)
		for _, p := range res.unknown {
			if !slices.Contains(loaded.UnknownFields, p) {
				loaded.UnknownFields = append(loaded.UnknownFields, p)
			}
		}
	}
	applyServiceOverrides(loaded.Bootstrap, o)
	if len(stubbed) > 0 {
		loaded.stubbed = stubbed
		return loaded, errors.Join(stubbed...)
	}
	return loaded, nil
}

// checkBootstrapVersion accepts --bootstrap-version unset or 3. Outrigger
// implements only the v3 API, so the v2 upgrade path Envoy once had is an
// explicit refusal rather than a silent misreading.
func checkBootstrapVersion(v int) error {
	switch v {
	case 0, 3:
		return nil
	case 2:
		return errBootstrapV2
	default:
		return fmt.Errorf("unknown bootstrap version %d; only version 3 (the v3 API) is supported", v)
	}
}

// loadFile reads and decodes the configuration file. The returned error is
// for a file that cannot be used at all; decoding problems are in the
// result.
func loadFile(path string, allowUnknown bool) (decodeResult, error) {
	f, data, err := readSource(path)
	if err != nil {
		return decodeResult{}, err
	}
	return decode(f, data, allowUnknown), nil
}
