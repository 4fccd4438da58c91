package upstreamproxyprotocol

import (
	"encoding/binary"
	"errors"
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
)

// TLVs are compiled TlvEntry lists (the transport socket's added_tlvs,
// tcp_proxy's proxy_protocol_tlvs): the entries with a static value,
// encoded once, then those rendered from a format string per use, in
// that order, as Envoy appends its dynamic TLVs after the static ones.
type TLVs struct {
	static  []byte
	dynamic []dynamicTLV
}

// dynamicTLV is a TLV whose value a substitution format renders.
type dynamicTLV struct {
	typ byte
	f   *accesslog.Formatter
}

// CompileTLVs compiles entries; field is their path, for errors, and reg
// holds the formatter extensions a format_string may name. As in Envoy,
// each entry has exactly one of value and format_string.
func CompileTLVs(entries []*corev3.TlvEntry, field string, reg *extension.Registry) (TLVs, error) {
	var out TLVs
	var errs []error
	for i, e := range entries {
		at := fmt.Sprintf("%s[%d]", field, i)
		if e.GetType() > 255 {
			errs = append(errs, fmt.Errorf("%s.type: %d is not a TLV type (0 to 255)", at, e.GetType()))
			continue
		}
		hasValue, hasFormat := len(e.GetValue()) > 0, e.GetFormatString() != nil
		switch {
		case hasValue && hasFormat:
			errs = append(errs, fmt.Errorf("%s: only one of value and format_string may be set", at))
		case !hasValue && !hasFormat:
			errs = append(errs, fmt.Errorf("%s: one of value and format_string must be set", at))
		case hasFormat:
			f, err := accesslog.CompileSubstitution(e.GetFormatString(), reg)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s.format_string.%w", at, err))
				continue
			}
			out.dynamic = append(out.dynamic, dynamicTLV{typ: byte(e.GetType()), f: f})
		case len(e.GetValue()) > maxV2Block:
			errs = append(errs, fmt.Errorf("%s.value: longer than a TLV can be (65535 bytes)", at))
		default:
			out.static = appendTLV(out.static, byte(e.GetType()), e.GetValue())
		}
	}
	return out, errors.Join(errs...)
}

// Empty reports whether the list has no entries.
func (t *TLVs) Empty() bool { return len(t.static) == 0 && len(t.dynamic) == 0 }

// Dynamic reports whether some entry is rendered per use.
func (t *TLVs) Dynamic() bool { return len(t.dynamic) > 0 }

// Append appends the TLVs, the dynamic ones rendered with e, to dst. A
// rendered value longer than a TLV can hold is cut to 65535 bytes.
func (t *TLVs) Append(dst []byte, e *accesslog.Entry) []byte {
	dst = append(dst, t.static...)
	for _, d := range t.dynamic {
		at := len(dst)
		dst = append(dst, d.typ, 0, 0)
		dst = d.f.Append(dst, e)
		if n := len(dst) - at - 3; n > maxV2Block {
			dst = dst[:at+3+maxV2Block]
		}
		binary.BigEndian.PutUint16(dst[at+1:at+3], uint16(len(dst)-at-3))
	}
	return dst
}

// appendTLV appends one TLV to dst.
func appendTLV(dst []byte, typ byte, value []byte) []byte {
	dst = append(dst, typ)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(value)))
	return append(dst, value...)
}

// Types lists the types of a well-formed TLV block's TLVs, in order.
func Types(block []byte) []byte {
	var out []byte
	for len(block) >= 3 {
		out = append(out, block[0])
		block = block[3+int(binary.BigEndian.Uint16(block[1:3])):]
	}
	return out
}
