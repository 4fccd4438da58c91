package accesslog

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
)

// metadataSource says whose metadata a metadata operator reads.
type metadataSource uint8

const (
	metadataDynamic metadataSource = iota
	metadataCluster
	metadataUpstreamHost
	metadataRoute
	metadataVirtualHost
	metadataListener
)

// metadataRef is a compiled metadata operator: %DYNAMIC_METADATA(NS:K...)%,
// %CLUSTER_METADATA(...)%, %UPSTREAM_METADATA(...)% or
// %METADATA(TYPE:NS:K...)%.
type metadataRef struct {
	source    metadataSource
	namespace string
	path      []string
}

// metadataTypes are the TYPE arguments of %METADATA(TYPE:...)% that
// Outrigger serves, by name.
var metadataTypes = map[string]metadataSource{
	"DYNAMIC":       metadataDynamic,
	"CLUSTER":       metadataCluster,
	"UPSTREAM_HOST": metadataUpstreamHost,
	"ROUTE":         metadataRoute,
	"VIRTUAL_HOST":  metadataVirtualHost,
	"LISTENER":      metadataListener,
}

// parseMetadataOperator compiles the built-in metadata operators. Like
// Envoy, the *_METADATA operators need arguments and take no length,
// while %METADATA(...)% (Envoy's formerly separate extension) takes one.
func parseMetadataOperator(name, args string, hasArgs bool, maxLen int) (*metadataRef, error) {
	if name == "METADATA" {
		typ, rest, _ := strings.Cut(args, ":")
		src, ok := metadataTypes[typ]
		if !ok {
			return nil, fmt.Errorf("%%METADATA(%s)%%: %s is not supported type of metadata", args, typ)
		}
		ns, path := splitMetadataPath(rest)
		return &metadataRef{source: src, namespace: ns, path: path}, nil
	}
	if !hasArgs || args == "" {
		return nil, fmt.Errorf("%s requires parameters", name)
	}
	if maxLen >= 0 {
		//lint:ignore ST1005 Envoy's own wording, period included, so that operators recognise it.
		return nil, fmt.Errorf("%s does not allow length to be specified.", name)
	}
	ns, path := splitMetadataPath(args)
	src := metadataDynamic
	switch name {
	case "CLUSTER_METADATA":
		src = metadataCluster
	case "UPSTREAM_METADATA":
		src = metadataUpstreamHost
	}
	return &metadataRef{source: src, namespace: ns, path: path}, nil
}

// splitMetadataPath splits "NS:K1:K2" into the namespace and the keys;
// empty keys stay, as Envoy keeps them (they match nothing).
func splitMetadataPath(s string) (string, []string) {
	ns, rest, ok := strings.Cut(s, ":")
	if !ok {
		return ns, nil
	}
	return ns, strings.Split(rest, ":")
}

// metadata is the metadata the operator reads from e; nil when there is
// none (no cluster or host chosen yet).
func (m *metadataRef) metadata(e *Entry) *corev3.Metadata {
	switch m.source {
	case metadataCluster:
		return e.ClusterMetadata
	case metadataUpstreamHost:
		return e.UpstreamHostMetadata
	case metadataRoute:
		return e.RouteMetadata
	case metadataVirtualHost:
		return e.VirtualHostMetadata
	case metadataListener:
		return e.ListenerMetadata
	}
	return e.DynamicMetadata
}

// value looks the operator's value up: the namespace's whole struct
// without keys, else the value at the key path. nil is missing: an absent
// namespace or key, a key below a non-struct, or a null value.
func (m *metadataRef) value(e *Entry) *structpb.Value {
	st, ok := m.metadata(e).GetFilterMetadata()[m.namespace]
	if !ok {
		return nil
	}
	if len(m.path) == 0 {
		return structpb.NewStructValue(st)
	}
	var v *structpb.Value
	for i, key := range m.path {
		if v, ok = st.GetFields()[key]; !ok {
			return nil
		}
		if i < len(m.path)-1 {
			if st = v.GetStructValue(); st == nil {
				return nil
			}
		}
	}
	if _, null := v.GetKind().(*structpb.Value_NullValue); null || v.GetKind() == nil {
		return nil
	}
	return v
}

// appendText appends the value as text: a string as it is, anything else
// as JSON (what Envoy prints for numbers, booleans, lists and structs).
func (m *metadataRef) appendText(dst []byte, e *Entry) ([]byte, bool) {
	v := m.value(e)
	if v == nil {
		return dst, false
	}
	if s, ok := v.GetKind().(*structpb.Value_StringValue); ok {
		return append(dst, s.StringValue...), true
	}
	return appendJSONValue(dst, v), true
}

// appendTyped appends the value as its own JSON type, for typed JSON
// formats; Envoy does not truncate these.
func (m *metadataRef) appendTyped(dst []byte, e *Entry) ([]byte, bool) {
	v := m.value(e)
	if v == nil {
		return dst, false
	}
	return appendJSONValue(dst, v), true
}

// appendJSONValue appends v as JSON the way Envoy's JSON utility writes
// it: object keys sorted, numbers in their shortest form.
func appendJSONValue(dst []byte, v *structpb.Value) []byte {
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		return appendJSONString(dst, []byte(k.StringValue))
	case *structpb.Value_NumberValue:
		return appendJSONNumber(dst, k.NumberValue)
	case *structpb.Value_BoolValue:
		return strconv.AppendBool(dst, k.BoolValue)
	case *structpb.Value_StructValue:
		fields := k.StructValue.GetFields()
		keys := make([]string, 0, len(fields))
		for key := range fields {
			keys = append(keys, key)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, key := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, []byte(key))
			dst = append(dst, ':')
			dst = appendJSONValue(dst, fields[key])
		}
		return append(dst, '}')
	case *structpb.Value_ListValue:
		dst = append(dst, '[')
		for i, item := range k.ListValue.GetValues() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONValue(dst, item)
		}
		return append(dst, ']')
	}
	return append(dst, "null"...)
}

// appendJSONNumber appends f as C++'s std::to_chars writes a double (what
// Envoy's JSON output uses): the shorter of the fixed and the exponent
// forms, the fixed one on a tie. NaN and infinities, which JSON cannot
// hold, are null.
func appendJSONNumber(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, 'f', -1, 64)
	fixed := len(dst) - start
	dst = strconv.AppendFloat(dst, f, 'e', -1, 64)
	if len(dst)-start-fixed < fixed {
		return append(dst[:start], dst[start+fixed:]...)
	}
	return dst[:start+fixed]
}

// MergeMetadata merges fields into namespace of md (nil: none yet), as
// Envoy's setDynamicMetadata does: each field replaces the one of its
// name. fields is kept as is when the namespace is new; a namespace that
// already has fields gets a new struct, so that neither fields nor the
// struct in place, which callers may share, is modified. It returns the
// metadata to keep.
func MergeMetadata(md *corev3.Metadata, namespace string, fields *structpb.Struct) *corev3.Metadata {
	if md == nil {
		md = &corev3.Metadata{}
	}
	if md.FilterMetadata == nil {
		md.FilterMetadata = map[string]*structpb.Struct{}
	}
	old := md.FilterMetadata[namespace]
	if old == nil {
		md.FilterMetadata[namespace] = fields
		return md
	}
	merged := &structpb.Struct{Fields: make(map[string]*structpb.Value, len(old.GetFields())+len(fields.GetFields()))}
	for k, v := range old.GetFields() {
		merged.Fields[k] = v
	}
	for k, v := range fields.GetFields() {
		merged.Fields[k] = v
	}
	md.FilterMetadata[namespace] = merged
	return md
}

// SetTypedMetadata puts value at namespace of md's typed_filter_metadata
// (replacing what was there: an Any does not merge), allocating md and
// the map as needed. The map is copied first: a stream's metadata may
// share it with its connection's.
func SetTypedMetadata(md *corev3.Metadata, namespace string, value *anypb.Any) *corev3.Metadata {
	if md == nil {
		md = &corev3.Metadata{}
	}
	typed := make(map[string]*anypb.Any, len(md.GetTypedFilterMetadata())+1)
	maps.Copy(typed, md.GetTypedFilterMetadata())
	typed[namespace] = value
	md.TypedFilterMetadata = typed
	return md
}
