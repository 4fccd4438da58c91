package cel

import (
	"errors"
	"reflect"
	"strings"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// lazyMap is a CEL map whose entries are found on demand: looking one
// key up reads only that attribute or header. What needs the whole map
// (iteration, size, equality, conversion) builds it first. It is either
// a top-level attribute group (request, source, ...) of a, or, with h
// set, a header map, whose keys are matched without regard to case, as
// Envoy's header maps are.
type lazyMap struct {
	a    *Activation
	kind groupKind
	h    HeaderGetter
}

var _ traits.Mapper = (*lazyMap)(nil)

func (m *lazyMap) find(key string) (ref.Val, bool) {
	if m.h != nil {
		return header(m.h, strings.ToLower(key))
	}
	return m.a.attribute(m.kind, key)
}

func (m *lazyMap) materialize() (traits.Mapper, error) {
	if m.h != nil {
		r, ok := m.h.(HeaderRanger)
		if !ok {
			return nil, errors.New("this header map cannot be listed")
		}
		out := map[string]string{}
		r.Range(func(name, _ string) bool {
			if _, seen := out[name]; !seen {
				out[name], _ = m.h.Get(name)
			}
			return true
		})
		return types.NewStringStringMap(types.DefaultTypeAdapter, out), nil
	}
	out := map[ref.Val]ref.Val{}
	for _, k := range groupKeys[m.kind] {
		if v, ok := m.find(k); ok {
			out[types.String(k)] = v
		}
	}
	return types.NewRefValMap(m.a.adapter, out), nil
}

// ConvertToNative implements ref.Val.
func (m *lazyMap) ConvertToNative(t reflect.Type) (any, error) {
	full, err := m.materialize()
	if err != nil {
		return nil, err
	}
	return full.ConvertToNative(t)
}

// ConvertToType implements ref.Val.
func (m *lazyMap) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case types.MapType:
		return m
	case types.TypeType:
		return types.MapType
	}
	return types.NewErr("type conversion error from map to '%s'", t)
}

// Equal implements ref.Val.
func (m *lazyMap) Equal(o ref.Val) ref.Val {
	full := m.whole()
	if full == nil {
		return errNotListable
	}
	return full.Equal(o)
}

// Type implements ref.Val.
func (m *lazyMap) Type() ref.Type { return types.MapType }

// Value implements ref.Val.
func (m *lazyMap) Value() any { return m }

// Contains implements traits.Container.
func (m *lazyMap) Contains(k ref.Val) ref.Val {
	v, ok := m.Find(k)
	if !ok && v != nil {
		return v
	}
	return types.Bool(ok)
}

// Get implements traits.Indexer.
func (m *lazyMap) Get(k ref.Val) ref.Val {
	v, ok := m.Find(k)
	if !ok {
		if v != nil {
			return v
		}
		return types.NewErr("no such key: %v", k)
	}
	return v
}

// Iterator implements traits.Iterable.
func (m *lazyMap) Iterator() traits.Iterator {
	full := m.whole()
	if full == nil {
		return errIterator{}
	}
	return full.Iterator()
}

// Size implements traits.Sizer.
func (m *lazyMap) Size() ref.Val {
	full := m.whole()
	if full == nil {
		return errNotListable
	}
	return full.Size()
}

// Find implements traits.Mapper: a key that is not a string is an
// error, one that the map does not have is (nil, false), which CEL
// reports as "no such key".
func (m *lazyMap) Find(k ref.Val) (ref.Val, bool) {
	s, ok := k.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(k), false
	}
	v, ok := m.find(string(s))
	if !ok {
		return nil, false
	}
	return v, true
}

// whole is the materialized map, nil when it cannot be made.
func (m *lazyMap) whole() traits.Mapper {
	full, err := m.materialize()
	if err != nil {
		return nil
	}
	return full
}

// errIterator is the iterator of a map that cannot be listed: it makes
// the comprehension fail rather than see an empty map.
type errIterator struct{}

func (errIterator) ConvertToNative(reflect.Type) (any, error) { return nil, errors.New("not listable") }
func (errIterator) ConvertToType(ref.Type) ref.Val            { return errNotListable }
func (errIterator) Equal(ref.Val) ref.Val                     { return errNotListable }
func (errIterator) Type() ref.Type                            { return types.IteratorType }
func (errIterator) Value() any                                { return nil }
func (errIterator) HasNext() ref.Val                          { return errNotListable }
func (errIterator) Next() ref.Val                             { return errNotListable }

var errNotListable = types.NewErr("this header map cannot be listed")
