package cluster

import (
	"net/netip"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	metadatav3 "github.com/envoyproxy/go-control-plane/envoy/type/metadata/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// origDstMetadataKey is original_dst_lb_config.metadata_key: where the
// request's dynamic metadata names the host ("ip:port"), under the
// filter_metadata namespace, then the path's keys.
type origDstMetadataKey struct {
	namespace string
	path      []string
}

// buildOrigDstMetadataKey checks a metadata_key: a namespace and a path
// of keys (the only kind of segment the API has). Errors are relative to
// original_dst_lb_config.
func buildOrigDstMetadataKey(k *metadatav3.MetadataKey) (*origDstMetadataKey, error) {
	if k == nil {
		return nil, nil
	}
	out := &origDstMetadataKey{namespace: k.GetKey()}
	for i, seg := range k.GetPath() {
		key := seg.GetKey()
		if key == "" {
			return nil, configErrorf(join("metadata_key", index("path", i)+".key"), "required")
		}
		out.path = append(out.path, key)
	}
	return out, nil
}

// target reads the host the dynamic metadata md names, as Envoy's
// metadataOverrideHost does: the value at the key (a list's first
// element) must be a string "ip:port". found is false when there is no
// string there; valid is false when the string is not an address.
func (k *origDstMetadataKey) target(md *corev3.Metadata) (dst netip.AddrPort, found, valid bool) {
	s, ok := md.GetFilterMetadata()[k.namespace]
	if !ok {
		return dst, false, false
	}
	v := structpb.NewStructValue(s)
	for _, key := range k.path {
		f, ok := v.GetStructValue().GetFields()[key]
		if !ok {
			return dst, false, false
		}
		v = f
	}
	if l := v.GetListValue(); l != nil && len(l.GetValues()) > 0 {
		v = l.GetValues()[0]
	}
	str, ok := v.GetKind().(*structpb.Value_StringValue)
	if !ok {
		return dst, false, false
	}
	ap, err := netip.ParseAddrPort(str.StringValue)
	if err != nil || ap.Addr().Zone() != "" {
		return dst, true, false
	}
	return ap, true, true
}
