package extproc

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	mappedv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/ext_proc/processing_request_modifiers/mapped_attribute_builder/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/cel"
)

// RequestModifiersCategory is the category of processing_request_modifier's
// extensions.
const RequestModifiersCategory = "envoy.http.ext_proc.processing_request_modifiers"

// MappedAttributeBuilderName is the one processing request modifier,
// which the filter compiles itself (its registry entry has no factory).
const MappedAttributeBuilderName = "proxy.http.ext_proc.processing_request_modifiers.mapped_attribute_builder"

// attributeMapping is a compiled MappedAttributeBuilder: the attributes
// of each direction, each under the name it maps its CEL expression to.
// A direction with some replaces the request_attributes or
// response_attributes in the first message of that direction, as Envoy's
// MappedAttributeBuilder rewrites the filter's attributes struct of that
// message; a direction without any keeps the filter's own.
type attributeMapping struct {
	request, response []attribute
}

// compileRequestModifier compiles a processing_request_modifier found at
// path.
func compileRequestModifier(tc *corev3.TypedExtensionConfig, path string) (*attributeMapping, error) {
	a := tc.GetTypedConfig()
	if a == nil {
		return nil, errors.New(path + ".typed_config: must be set")
	}
	m, err := a.UnmarshalNew()
	if err != nil {
		return nil, fmt.Errorf("%s.typed_config: %w", path, err)
	}
	p, ok := m.(*mappedv3.MappedAttributeBuilder)
	if !ok {
		return nil, fmt.Errorf("%s.typed_config: %s is not supported by Outrigger (supported: envoy.extensions.http.ext_proc.processing_request_modifiers.mapped_attribute_builder.v3.MappedAttributeBuilder)", path, m.ProtoReflect().Descriptor().FullName())
	}
	am := &attributeMapping{}
	if am.request, err = compileMapped(p.GetMappedRequestAttributes(), path+".typed_config.mapped_request_attributes"); err != nil {
		return nil, err
	}
	if am.response, err = compileMapped(p.GetMappedResponseAttributes(), path+".typed_config.mapped_response_attributes"); err != nil {
		return nil, err
	}
	return am, nil
}

// compileMapped compiles a name-to-expression map, in name order; field
// names it in errors.
func compileMapped(mapped map[string]string, field string) ([]attribute, error) {
	if len(mapped) == 0 {
		return nil, nil
	}
	env, err := cel.NewEnv()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	out := make([]attribute, 0, len(mapped))
	for _, k := range slices.Sorted(maps.Keys(mapped)) {
		prg, err := env.CompileText(mapped[k])
		if err != nil {
			return nil, fmt.Errorf("%s[%q]: %w", field, k, err)
		}
		out = append(out, attribute{name: k, prg: prg})
	}
	return out, nil
}

// attributeLists are the attributes the filter sends in each direction:
// the processing_request_modifier's mapping (if any) applied over the
// request_attributes and response_attributes (the route's overrides, else
// the filter's).
func (set *settings) attributeLists() (request, response []attribute) {
	request, response = set.reqAttrs, set.respAttrs
	mapping := set.modifier
	if mapping == nil {
		return request, response
	}
	if len(mapping.request) > 0 {
		request = mapping.request
	}
	if len(mapping.response) > 0 {
		response = mapping.response
	}
	return request, response
}
