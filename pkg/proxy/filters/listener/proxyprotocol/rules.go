package proxyprotocol

import (
	"encoding/base64"
	"encoding/binary"
	"unicode/utf8"

	ppv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/proxy_protocol/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/listenerfilter"
)

// defaultNamespace is the dynamic metadata namespace of a rule that names
// none (Envoy's filter name).
const defaultNamespace = "envoy.filters.listener.proxy_protocol"

// rule is where one TLV type's value goes: a key of a dynamic metadata
// namespace, encoded as configured.
type rule struct {
	namespace, key string
	base64         bool
}

// compileRules indexes rules by TLV type. A later rule for a type replaces
// an earlier one, as in Envoy's map.
func compileRules(rs []*ppv3.ProxyProtocol_Rule) map[byte]rule {
	if len(rs) == 0 {
		return nil
	}
	m := make(map[byte]rule, len(rs))
	for _, r := range rs {
		kv := r.GetOnTlvPresent()
		ns := kv.GetMetadataNamespace()
		if ns == "" {
			ns = defaultNamespace
		}
		m[byte(r.GetTlvType())] = rule{
			namespace: ns,
			key:       kv.GetKey(),
			base64:    kv.GetValueStringEncoding() == ppv3.ProxyProtocol_KeyValuePair_BASE64,
		}
	}
	return m
}

// applyRules records the values of the TLVs in tlvs (a block the parser
// has checked) that rules name in the connection's dynamic metadata. The
// first TLV that sets a key keeps it: Envoy inserts into the namespace's
// fields, which leaves a present key alone.
func applyRules(s *listenerfilter.Socket, rules map[byte]rule, tlvs []byte) {
	for len(tlvs) >= 3 {
		t, n := tlvs[0], int(binary.BigEndian.Uint16(tlvs[1:3]))
		value := tlvs[3 : 3+n]
		tlvs = tlvs[3+n:]
		r, ok := rules[t]
		if !ok {
			continue
		}
		if _, set := s.DynamicMetadata().GetFilterMetadata()[r.namespace].GetFields()[r.key]; set {
			continue
		}
		var v string
		if r.base64 {
			v = base64.StdEncoding.EncodeToString(value)
		} else {
			v = sanitizeUTF8(value)
		}
		s.SetDynamicMetadata(r.namespace, &structpb.Struct{Fields: map[string]*structpb.Value{r.key: structpb.NewStringValue(v)}})
	}
}

// sanitizeUTF8 replaces each byte of b that is not part of a valid UTF-8
// sequence with '!', keeping the length (Envoy's sanitizeUtf8String).
func sanitizeUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	out := make([]byte, 0, len(b))
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			out = append(out, '!')
		} else {
			out = append(out, b[:size]...)
		}
		b = b[size:]
	}
	return string(out)
}
