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
// (iteration, size, equality, conversion) builds it first.
type lazyMap interface {
	find(key string) (ref.Val, bool)
	materialize() (traits.Mapper, error)
}

// group is a top-level attribute group (request, source, ...) as a map.
type group struct {
	a    *Activation
	kind groupKind
}

func (g *group) find(key string) (ref.Val, bool) { return g.a.attribute(g.kind, key) }

func (g *group) materialize() (traits.Mapper, error) {
	m := map[ref.Val]ref.Val{}
	for _, k := range groupKeys[g.kind] {
		if v, ok := g.find(k); ok {
			m[types.String(k)] = v
		}
	}
	return types.NewRefValMap(g.a.adapter, m), nil
}

// headerMap is a header map; keys are matched without regard to case,
// as Envoy's header maps are.
type headerMap struct {
	h HeaderGetter
}

func (m *headerMap) find(key string) (ref.Val, bool) { return header(m.h, strings.ToLower(key)) }

func (m *headerMap) materialize() (traits.Mapper, error) {
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

// The lazy maps' CEL methods, shared through mapVal.
var (
	_ traits.Mapper = (*group)(nil)
	_ traits.Mapper = (*headerMap)(nil)
)

func (g *group) ConvertToNative(t reflect.Type) (any, error) { return convertToNative(g, t) }
func (g *group) ConvertToType(t ref.Type) ref.Val            { return convertToType(g, t) }
func (g *group) Equal(o ref.Val) ref.Val                     { return equal(g, o) }
func (g *group) Type() ref.Type                              { return types.MapType }
func (g *group) Value() any                                  { return g }
func (g *group) Contains(k ref.Val) ref.Val                  { return contains(g, k) }
func (g *group) Get(k ref.Val) ref.Val                       { return get(g, k) }
func (g *group) Iterator() traits.Iterator                   { return iterator(g) }
func (g *group) Size() ref.Val                               { return size(g) }
func (g *group) Find(k ref.Val) (ref.Val, bool)              { return find(g, k) }

func (m *headerMap) ConvertToNative(t reflect.Type) (any, error) { return convertToNative(m, t) }
func (m *headerMap) ConvertToType(t ref.Type) ref.Val            { return convertToType(m, t) }
func (m *headerMap) Equal(o ref.Val) ref.Val                     { return equal(m, o) }
func (m *headerMap) Type() ref.Type                              { return types.MapType }
func (m *headerMap) Value() any                                  { return m }
func (m *headerMap) Contains(k ref.Val) ref.Val                  { return contains(m, k) }
func (m *headerMap) Get(k ref.Val) ref.Val                       { return get(m, k) }
func (m *headerMap) Iterator() traits.Iterator                   { return iterator(m) }
func (m *headerMap) Size() ref.Val                               { return size(m) }
func (m *headerMap) Find(k ref.Val) (ref.Val, bool)              { return find(m, k) }

// find looks a key up; a key that is not a string is an error, one that
// the map does not have is (nil, false), which CEL reports as "no such
// key".
func find(m lazyMap, k ref.Val) (ref.Val, bool) {
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

func get(m lazyMap, k ref.Val) ref.Val {
	v, ok := find(m, k)
	if !ok {
		if v != nil {
			return v
		}
		return types.NewErr("no such key: %v", k)
	}
	return v
}

func contains(m lazyMap, k ref.Val) ref.Val {
	v, ok := find(m, k)
	if !ok && v != nil {
		return v
	}
	return types.Bool(ok)
}

func whole(m lazyMap) traits.Mapper {
	full, err := m.materialize()
	if err != nil {
		return nil
	}
	return full
}

func iterator(m lazyMap) traits.Iterator {
	full := whole(m)
	if full == nil {
		return errIterator{}
	}
	return full.Iterator()
}

func size(m lazyMap) ref.Val {
	full := whole(m)
	if full == nil {
		return types.NewErr("this header map cannot be listed")
	}
	return full.Size()
}

func equal(m lazyMap, o ref.Val) ref.Val {
	full := whole(m)
	if full == nil {
		return types.NewErr("this header map cannot be listed")
	}
	return full.Equal(o)
}

func convertToType(m lazyMap, t ref.Type) ref.Val {
	switch t {
	case types.MapType:
		return m.(ref.Val)
	case types.TypeType:
		return types.MapType
	}
	return types.NewErr("type conversion error from map to '%s'", t)
}

func convertToNative(m lazyMap, t reflect.Type) (any, error) {
	full, err := m.materialize()
	if err != nil {
		return nil, err
	}
	return full.ConvertToNative(t)
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
