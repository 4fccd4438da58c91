// Package setmetadata is the set metadata HTTP filter
// (envoy.filters.http.set_metadata): on each request it writes fixed
// values into namespaces of the request's dynamic metadata, where access
// logs (%DYNAMIC_METADATA%), RBAC and later filters read them, and typed
// values (typed_value) into its typed metadata, where ext_proc's typed
// forwarding namespaces read them. A namespace
// already present is merged into only with allow_overwrite, as in Envoy;
// otherwise http.<stat_prefix>.set_metadata.overwrite_denied counts the
// refusal.
package setmetadata

import (
	"errors"
	"fmt"

	smv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/set_metadata/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.set_metadata"

// Factory builds the filter.
type Factory struct{}

var _ httpfilter.Factory = Factory{}

// entry is one namespace's value to write.
type entry struct {
	namespace      string
	value          *structpb.Struct
	allowOverwrite bool
}

// typedEntry is one namespace's typed value to write.
type typedEntry struct {
	namespace      string
	value          *anypb.Any
	allowOverwrite bool
}

// Compile implements httpfilter.Factory.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	c, ok := config.(*smv3.Config)
	if !ok {
		return nil, errors.New("not a set_metadata Config")
	}
	if ctx.Stats == nil {
		return nil, errors.New("no stat store")
	}
	f := &filterConfig{
		overwriteDenied: ctx.Stats.Scope(ctx.StatPrefix + "set_metadata.").Counter("overwrite_denied"),
	}
	// The deprecated top-level pair comes first and may always
	// overwrite, as in Envoy.
	//lint:ignore SA1019 Envoy still accepts the deprecated pair
	ns, value := c.GetMetadataNamespace(), c.GetValue()
	if ns != "" {
		f.entries = append(f.entries, entry{namespace: ns, value: valueOrEmpty(value), allowOverwrite: true})
	} else if value != nil {
		return nil, errors.New("value: needs metadata_namespace")
	}
	for i, m := range c.GetMetadata() {
		switch {
		case m.GetMetadataNamespace() == "":
			return nil, fmt.Errorf("metadata[%d].metadata_namespace: must not be empty", i)
		case m.GetTypedValue() != nil && m.GetValue() != nil:
			// Envoy would write value and drop typed_value.
			return nil, fmt.Errorf("metadata[%d].typed_value: only one of value and typed_value may be set", i)
		case m.GetTypedValue() != nil:
			f.typed = append(f.typed, typedEntry{namespace: m.GetMetadataNamespace(), value: m.GetTypedValue(), allowOverwrite: m.GetAllowOverwrite()})
			continue
		case m.GetValue() == nil:
			return nil, fmt.Errorf("metadata[%d]: one of value or typed_value must be set", i)
		}
		f.entries = append(f.entries, entry{namespace: m.GetMetadataNamespace(), value: m.GetValue(), allowOverwrite: m.GetAllowOverwrite()})
	}
	return f, nil
}

func valueOrEmpty(s *structpb.Struct) *structpb.Struct {
	if s == nil {
		return &structpb.Struct{}
	}
	return s
}

// filterConfig is the compiled filter; it keeps no state per request, so
// it is its own filter.
type filterConfig struct {
	entries         []entry
	typed           []typedEntry
	overwriteDenied *stats.Counter
}

var _ httpfilter.Decoder = (*filterConfig)(nil)

// NewFilter implements httpfilter.Config.
func (c *filterConfig) NewFilter() httpfilter.Filter { return c }

// DecodeHeaders implements httpfilter.Decoder: Envoy's decodeHeaders.
func (c *filterConfig) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	for i := range c.entries {
		e := &c.entries[i]
		existing := s.DynamicMetadata().GetFilterMetadata()[e.namespace]
		switch {
		case existing == nil:
			s.SetDynamicMetadata(e.namespace, e.value)
		case e.allowOverwrite:
			s.SetDynamicMetadata(e.namespace, merged(existing, e.value))
		default:
			c.overwriteDenied.Inc()
		}
	}
	// Then the typed values, as Envoy does: an Any replaces, it does not
	// merge.
	for i := range c.typed {
		e := &c.typed[i]
		if _, ok := s.DynamicMetadata().GetTypedFilterMetadata()[e.namespace]; ok && !e.allowOverwrite {
			c.overwriteDenied.Inc()
			continue
		}
		s.SetTypedDynamicMetadata(e.namespace, e.value)
	}
	return httpfilter.Continue
}

// merged is the fields of with merged into a copy of the fields of obj
// that with names, as Envoy's StructUtil::update does: structs merge
// recursively, lists append, and any other value (or a value of another
// kind) replaces. Fields of obj that with does not name are left to the
// stream's own per-field merge.
func merged(obj, with *structpb.Struct) *structpb.Struct {
	out := &structpb.Struct{Fields: make(map[string]*structpb.Value, len(with.GetFields()))}
	for k, v := range with.GetFields() {
		out.Fields[k] = mergeValue(obj.GetFields()[k], v)
	}
	return out
}

func mergeValue(old, with *structpb.Value) *structpb.Value {
	switch w := with.GetKind().(type) {
	case *structpb.Value_StructValue:
		if o, ok := old.GetKind().(*structpb.Value_StructValue); ok {
			m := merged(o.StructValue, w.StructValue)
			for k, v := range o.StructValue.GetFields() {
				if _, ok := m.Fields[k]; !ok {
					m.Fields[k] = v
				}
			}
			return structpb.NewStructValue(m)
		}
	case *structpb.Value_ListValue:
		if o, ok := old.GetKind().(*structpb.Value_ListValue); ok {
			vals := append(append([]*structpb.Value{}, o.ListValue.GetValues()...), w.ListValue.GetValues()...)
			return structpb.NewListValue(&structpb.ListValue{Values: vals})
		}
	}
	return with
}
