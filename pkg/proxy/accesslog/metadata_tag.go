package accesslog

import (
	"errors"
	"strconv"

	metadatav3 "github.com/envoyproxy/go-control-plane/envoy/type/metadata/v3"
	tracingtagsv3 "github.com/envoyproxy/go-control-plane/envoy/type/tracing/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// MetadataTag is a compiled metadata custom tag (CustomTag.metadata) of
// tracing or of the gRPC access log: its value is read from the request's
// metadata at the key path, as Envoy's MetadataCustomTag reads it.
type MetadataTag struct {
	ref metadataRef
	// def is default_value, used when the metadata has no value there.
	def string
}

// CompileMetadataTag compiles a CustomTag.metadata. The request kind
// reads the dynamic metadata, route the matched route's metadata, cluster
// and host the chosen upstream host's cluster and endpoint metadata. Errors name the field below the metadata message.
func CompileMetadataTag(m *tracingtagsv3.CustomTag_Metadata) (*MetadataTag, error) {
	t := &MetadataTag{def: m.GetDefaultValue()}
	switch m.GetKind().GetKind().(type) {
	case *metadatav3.MetadataKind_Request_:
		t.ref.source = metadataDynamic
	case *metadatav3.MetadataKind_Cluster_:
		t.ref.source = metadataCluster
	case *metadatav3.MetadataKind_Host_:
		t.ref.source = metadataUpstreamHost
	case *metadatav3.MetadataKind_Route_:
		t.ref.source = metadataRoute
	default:
		return nil, errors.New("kind: one of request, route, cluster or host is required")
	}
	key := m.GetMetadataKey()
	if key.GetKey() == "" {
		return nil, errors.New("metadata_key.key: must be set")
	}
	if len(key.GetPath()) == 0 {
		return nil, errors.New("metadata_key.path: must have at least one segment")
	}
	t.ref.namespace = key.GetKey()
	for _, seg := range key.GetPath() {
		t.ref.path = append(t.ref.path, seg.GetKey())
	}
	return t, nil
}

// AppendValue appends the tag's value for e and reports whether it has
// one: strings as they are, booleans and numbers (%.6g) as Envoy prints
// them, lists and structs as JSON; the default value when the metadata
// has none, and nothing without a default. Like Envoy, a cluster tag reads
// the cluster of the chosen host, so it has no value before one is chosen.
func (t *MetadataTag) AppendValue(dst []byte, e *Entry) ([]byte, bool) {
	var v *structpb.Value
	if t.ref.source != metadataCluster || e.UpstreamHost != "" {
		v = t.ref.value(e)
	}
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		return append(dst, k.StringValue...), true
	case *structpb.Value_BoolValue:
		return strconv.AppendBool(dst, k.BoolValue), true
	case *structpb.Value_NumberValue:
		return strconv.AppendFloat(dst, k.NumberValue, 'g', 6, 64), true
	case *structpb.Value_ListValue, *structpb.Value_StructValue:
		return appendJSONValue(dst, v), true
	}
	if t.def == "" {
		return dst, false
	}
	return append(dst, t.def...), true
}
