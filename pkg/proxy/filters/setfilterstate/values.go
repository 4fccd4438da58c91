// Package setfilterstate compiles the values of the set_filter_state
// filters (envoy.extensions.filters.common.set_filter_state.v3), which the
// HTTP filter applies to a request's filter state and the network filter
// to a connection's: each value is a substitution format rendered with
// what the stream knows, turned into an object by the factory its key (or
// factory_key) names, as Envoy's filters/common/set_filter_state.
package setfilterstate

import (
	"errors"
	"fmt"

	sfsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/common/set_filter_state/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filterstate"
)

// value is one compiled FilterStateValue.
type value struct {
	key         string
	factory     filterstate.Factory
	format      *accesslog.Formatter
	skipIfEmpty bool
}

// Values is a compiled list of filter state values, applied in order.
type Values struct {
	list []value
}

// Compile compiles a list of FilterStateValue; reg holds the formatter
// extensions the format strings may name. Errors name the field from
// field (on_request_headers, on_new_connection). As in Envoy, a key
// without an object factory is refused: a custom key names the generic
// one in factory_key (envoy.string, envoy.hashable_string).
func Compile(list []*sfsv3.FilterStateValue, field string, reg *extension.Registry) (Values, error) {
	var out Values
	var errs []error
	for i, v := range list {
		at := fmt.Sprintf("%s[%d]", field, i)
		key := v.GetObjectKey()
		if key == "" {
			errs = append(errs, errors.New(at+".object_key: required"))
			continue
		}
		name, nameField := key, "object_key"
		if fk := v.GetFactoryKey(); fk != "" {
			name, nameField = fk, "factory_key"
		}
		factory, ok := filterstate.FactoryOf(name)
		if !ok {
			errs = append(errs, fmt.Errorf("%s.%s: '%s' does not have an object factory (Outrigger has envoy.string, envoy.hashable_string and the well-known keys it reads: see docs/filters/set_filter_state.md)", at, nameField, name))
			continue
		}
		if v.GetFormatString() == nil {
			errs = append(errs, errors.New(at+".format_string: required"))
			continue
		}
		f, err := accesslog.CompileSubstitution(v.GetFormatString(), reg)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.format_string.%w", at, err))
			continue
		}
		// read_only is deprecated and has no effect in Envoy; the support
		// table lets only NONE through for shared_with_upstream.
		out.list = append(out.list, value{key: key, factory: factory, format: f, skipIfEmpty: v.GetSkipIfEmpty()})
	}
	return out, errors.Join(errs...)
}

// Empty reports whether there is no value to apply.
func (vs *Values) Empty() bool { return len(vs.list) == 0 }

// Apply renders each value with e and keeps the object made of it with
// set, in order, so that a later value's format sees an earlier one's
// object. An empty rendering is skipped with skip_if_empty; bytes the
// factory rejects (a port that is no number) are skipped, as Envoy skips
// them.
func (vs *Values) Apply(e *accesslog.Entry, set func(key string, obj accesslog.FilterStateObject)) {
	var buf []byte
	for i := range vs.list {
		v := &vs.list[i]
		buf = v.format.Append(buf[:0], e)
		if len(buf) == 0 && v.skipIfEmpty {
			continue
		}
		obj, ok := v.factory(string(buf))
		if !ok {
			continue
		}
		set(v.key, obj)
	}
}
