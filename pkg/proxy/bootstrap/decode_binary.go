package bootstrap

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
)

// decodeBinary decodes a binary (.pb) configuration into m and then checks
// it with checkDecoded: the wire format keeps unknown fields silently and
// leaves typed_config values as opaque bytes.
func decodeBinary(data []byte, m proto.Message, r *decodeReport) error {
	if err := (proto.UnmarshalOptions{Resolver: r.resolver()}).Unmarshal(data, m); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	checkDecoded(m.ProtoReflect(), "", r, 0)
	return nil
}

// checkDecoded walks a decoded message for unknown fields (kept by the wire
// format) and for typed_config values, whose types must be linked in and
// whose bytes are checked the same way. With unknown fields allowed they
// are removed, re-encoding any typed_config that held some. It reports
// whether it changed m. Every decoder's result goes through it, because
// even JSON and text can carry an Any as raw type_url and value bytes.
func checkDecoded(m protoreflect.Message, path string, r *decodeReport, depth int) (changed bool) {
	if depth > maxDepth {
		r.fail(path, "nested more than %d levels deep", maxDepth)
		return false
	}
	if unknown := m.GetUnknown(); len(unknown) > 0 {
		for _, num := range unknownNumbers(unknown) {
			// Only the number is known; it is written where a name goes.
			r.unknownField(childPath(path, strconv.Itoa(int(num))))
		}
		if r.allowUnknown {
			m.SetUnknown(nil)
			changed = true
		}
	}
	if m.Descriptor().FullName() == anyFullName {
		return checkAny(m, path, r, depth) || changed
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Message() == nil {
			return true
		}
		p := childPath(path, string(fd.Name()))
		switch {
		case fd.IsList():
			list := v.List()
			for i := range list.Len() {
				changed = checkDecoded(list.Get(i).Message(), indexPath(p, i), r, depth+1) || changed
			}
		case fd.IsMap():
			if fd.MapValue().Message() == nil {
				return true
			}
			mp := v.Map()
			for _, k := range sortedMapKeys(mp) {
				changed = checkDecoded(mp.Get(k).Message(), mapKeyPath(p, k), r, depth+1) || changed
			}
		default:
			changed = checkDecoded(v.Message(), p, r, depth+1) || changed
		}
		return true
	})
	return changed
}

// checkAny resolves an Any's type, checks its embedded message and, when
// unknown fields were dropped from it, re-encodes it. The Any is read by
// reflection, so that the Anys of dynamic messages (built from a
// descriptor rather than generated) are checked too.
func checkAny(m protoreflect.Message, path string, r *decodeReport, depth int) bool {
	fields := m.Descriptor().Fields()
	urlField, valueField := fields.ByName("type_url"), fields.ByName("value")
	typeURL, raw := m.Get(urlField).String(), m.Get(valueField).Bytes()
	if typeURL == "" && len(raw) == 0 {
		return false
	}
	mt, err := r.resolver().FindMessageByURL(typeURL)
	if err != nil {
		r.fail(path, "unknown type %q", typeURL)
		return false
	}
	converted := false
	if isTypedStruct(mt.Descriptor().FullName()) {
		// The configuration is a Struct naming its type: it becomes
		// that type's message, as Envoy converts it, and is checked as
		// such below.
		if mt, raw, err = unwrapTypedStruct(raw, path, r, depth); err != nil {
			r.errs = append(r.errs, err)
			return false
		}
		if mt == nil {
			return false
		}
		m.Set(urlField, protoreflect.ValueOfString(extension.TypeURL(mt.New().Interface())))
		m.Set(valueField, protoreflect.ValueOfBytes(raw))
		converted = true
	}
	inner := mt.New().Interface()
	if err := (proto.UnmarshalOptions{Resolver: r.resolver()}).Unmarshal(raw, inner); err != nil {
		r.fail(path, "invalid %s value: %v", mt.Descriptor().FullName(), err)
		return false
	}
	if !checkDecoded(inner.ProtoReflect(), path, r, depth+1) {
		// Nothing inside changed; the Any did if it was converted.
		return converted
	}
	value, err := proto.MarshalOptions{Deterministic: true}.Marshal(inner)
	if err != nil {
		r.fail(path, "re-encode %s: %v", mt.Descriptor().FullName(), err)
		return false
	}
	m.Set(valueField, protoreflect.ValueOfBytes(value))
	return true
}

// unknownNumbers lists the field numbers in raw unknown-field bytes, each
// once, in order of appearance.
func unknownNumbers(raw []byte) []protowire.Number {
	var (
		nums []protowire.Number
		seen = map[protowire.Number]bool{}
	)
	for len(raw) > 0 {
		num, _, n := protowire.ConsumeField(raw)
		if n < 0 {
			break
		}
		if !seen[num] {
			seen[num] = true
			nums = append(nums, num)
		}
		raw = raw[n:]
	}
	return nums
}

// sortedMapKeys returns mp's keys in order, so that problems are reported
// in the same order on every run.
func sortedMapKeys(mp protoreflect.Map) []protoreflect.MapKey {
	keys := make([]protoreflect.MapKey, 0, mp.Len())
	mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
		keys = append(keys, k)
		return true
	})
	slices.SortFunc(keys, func(a, b protoreflect.MapKey) int {
		return cmp.Compare(a.String(), b.String())
	})
	return keys
}

// mapKeyPath is the path of a map entry with any key kind.
func mapKeyPath(parent string, k protoreflect.MapKey) string {
	if s, ok := k.Interface().(string); ok {
		return keyPath(parent, s)
	}
	return parent + "[" + k.String() + "]"
}
