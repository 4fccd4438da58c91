package authzservice

import (
	"net"
	"strconv"
	"strings"
	"unicode/utf8"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// SocketAddress is an "ip:port" address as an Address.
func SocketAddress(hostPort string) *corev3.Address {
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		host = hostPort
	}
	p, _ := strconv.ParseUint(port, 10, 32)
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address:       host,
		PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(p)},
	}}}
}

// NodeLabels reads bootstrap_metadata_labels_key's labels from the node
// metadata, as Envoy: the fields of the Struct under key, each as its
// string value (a value of another kind reads as ""); none without a key
// or a Struct there.
func NodeLabels(md *structpb.Struct, key string) map[string]string {
	if key == "" {
		return nil
	}
	fields := md.GetFields()[key].GetStructValue().GetFields()
	if len(fields) == 0 {
		return nil
	}
	labels := make(map[string]string, len(fields))
	for k, v := range fields {
		labels[k] = v.GetStringValue()
	}
	return labels
}

// PickNamespaces copies the listed namespaces of md's filter metadata,
// those it has; the result is never nil, as Envoy always sends the
// message.
func PickNamespaces(md *corev3.Metadata, namespaces []string) *corev3.Metadata {
	mc := &corev3.Metadata{}
	for _, ns := range namespaces {
		if st := md.GetFilterMetadata()[ns]; st != nil {
			if mc.FilterMetadata == nil {
				mc.FilterMetadata = map[string]*structpb.Struct{}
			}
			mc.FilterMetadata[ns] = st
		}
	}
	return mc
}

// SanitizeUTF8 replaces the bytes of b that are not valid UTF-8 with '!',
// as Envoy's MessageUtil::sanitizeUtf8String does for a string field.
func SanitizeUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b))
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			sb.WriteByte('!')
		} else {
			sb.Write(b[:size])
		}
		b = b[size:]
	}
	return sb.String()
}
