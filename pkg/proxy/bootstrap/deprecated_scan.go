package bootstrap

import (
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// DeprecatedScanner finds the deprecated fields and enum values set in
// configuration messages, as Deprecated does, but cheaply enough to run on
// every resource a discovery update brings: what each message type can
// hold is worked out once, from its descriptor, and kept, so a walk only
// looks at the fields that are deprecated or lead to something that can
// be. A cluster without deprecated fields costs a few presence checks.
//
// The zero value is ready; a scanner is safe for concurrent use. The owner
// (the server) keeps one for the process: its cache only grows with the
// number of message types linked in.
type DeprecatedScanner struct {
	mu    sync.Mutex
	types map[protoreflect.FullName]*scanType
}

// scanType is what a message type can hold, computed once.
type scanType struct {
	// may is false when nothing reachable from the type is deprecated:
	// a value of it is skipped whole.
	may bool
	// isAny marks google.protobuf.Any, whose contents are looked up by
	// their own type.
	isAny bool
	// fields are the fields worth a look, in declaration order: those
	// deprecated, enums with deprecated values, and messages whose type
	// may hold something deprecated.
	fields []scanField
}

// scanField is one field worth a look.
type scanField struct {
	fd protoreflect.FieldDescriptor
	// deprecated: setting the field is a use.
	deprecated bool
	// enumDeprecated: the field's enum (a map's value's enum) has a
	// deprecated value.
	enumDeprecated bool
	// elem is the type of the field's message values (a map's values'),
	// when it may hold something deprecated.
	elem *scanType
}

// Scan lists the deprecated fields set in m and the deprecated enum values
// it uses, inside typed_config values too, in declaration order, with
// paths below prefix ("" for none).
func (s *DeprecatedScanner) Scan(m proto.Message, prefix string) []DeprecatedField {
	r := m.ProtoReflect()
	t := s.typeOf(r.Descriptor())
	if !t.may {
		return nil
	}
	var out []DeprecatedField
	s.walk(r, t, &scanPath{name: prefix}, &out, 0)
	return out
}

// scanPath is where a value is, kept as a chain so that the path's text
// is only made for what is reported. The root holds the prefix.
type scanPath struct {
	parent *scanPath
	name   string
	index  int
	key    *protoreflect.MapKey
}

// String renders the path as the decoders' errors do.
func (p *scanPath) String() string {
	if p.parent == nil {
		return p.name // the root: the prefix
	}
	parent := p.parent.String()
	switch {
	case p.key != nil:
		return mapKeyPath(childPath(parent, p.name), *p.key)
	case p.index >= 0:
		return indexPath(childPath(parent, p.name), p.index)
	default:
		return childPath(parent, p.name)
	}
}

// walk reports what m, of type t, holds.
func (s *DeprecatedScanner) walk(m protoreflect.Message, t *scanType, at *scanPath, out *[]DeprecatedField, depth int) {
	if depth > maxDepth || !t.may {
		return
	}
	if t.isAny {
		s.walkAny(m, at, out, depth)
		return
	}
	for i := range t.fields {
		f := &t.fields[i]
		if !m.Has(f.fd) {
			continue
		}
		p := &scanPath{parent: at, name: string(f.fd.Name()), index: -1}
		if f.deprecated {
			*out = append(*out, DeprecatedField{Path: p.String(), Name: f.fd.FullName(), File: f.fd.ParentFile().Path()})
		}
		if !f.enumDeprecated && f.elem == nil {
			continue
		}
		v := m.Get(f.fd)
		switch {
		case f.fd.IsList():
			list := v.List()
			for j := range list.Len() {
				s.value(f, list.Get(j), &scanPath{parent: at, name: p.name, index: j}, out, depth)
			}
		case f.fd.IsMap():
			mp := v.Map()
			for _, k := range sortedMapKeys(mp) {
				s.value(f, mp.Get(k), &scanPath{parent: at, name: p.name, index: -1, key: &k}, out, depth)
			}
		default:
			s.value(f, v, p, out, depth)
		}
	}
}

// value looks at one value of f: a deprecated enum value, or a message to
// walk.
func (s *DeprecatedScanner) value(f *scanField, v protoreflect.Value, at *scanPath, out *[]DeprecatedField, depth int) {
	if f.elem != nil {
		s.walk(v.Message(), f.elem, at, out, depth+1)
		return
	}
	enum := f.fd.Enum()
	if f.fd.IsMap() {
		enum = f.fd.MapValue().Enum()
	}
	if ev := enum.Values().ByNumber(v.Enum()); ev != nil && isDeprecated(ev.Options()) {
		*out = append(*out, DeprecatedField{Path: at.String(), Name: ev.FullName(), File: ev.ParentFile().Path()})
	}
}

// walkAny walks an Any's contents, when their type is linked in and may
// hold something deprecated (the Any is not decoded otherwise).
func (s *DeprecatedScanner) walkAny(m protoreflect.Message, at *scanPath, out *[]DeprecatedField, depth int) {
	fields := m.Descriptor().Fields()
	typeURL := m.Get(fields.ByName("type_url")).String()
	mt, err := protoregistry.GlobalTypes.FindMessageByURL(typeURL)
	if err != nil {
		return
	}
	t := s.typeOf(mt.Descriptor())
	if !t.may {
		return
	}
	inner := mt.New()
	if err := proto.Unmarshal(m.Get(fields.ByName("value")).Bytes(), inner.Interface()); err != nil {
		return
	}
	s.walk(inner, t, at, out, depth+1)
}

// typeOf is what a message type can hold, from the cache or worked out
// now for it and every type reachable from it.
func (s *DeprecatedScanner) typeOf(md protoreflect.MessageDescriptor) *scanType {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.types[md.FullName()]; ok {
		return t
	}
	if s.types == nil {
		s.types = make(map[protoreflect.FullName]*scanType)
	}
	// Gather the types reachable from md not known yet, with what each
	// holds itself; then spread "may" from the types that hold something
	// to those that lead to them, until nothing changes (types can be
	// recursive, so one pass in any order is not enough).
	type pending struct {
		md protoreflect.MessageDescriptor
		t  *scanType
	}
	var todo []pending
	var gather func(protoreflect.MessageDescriptor) *scanType
	gather = func(md protoreflect.MessageDescriptor) *scanType {
		if t, ok := s.types[md.FullName()]; ok {
			return t
		}
		t := &scanType{isAny: md.FullName() == anyFullName}
		s.types[md.FullName()] = t
		todo = append(todo, pending{md, t})
		if t.isAny {
			t.may = true
			return t
		}
		fields := md.Fields()
		for i := range fields.Len() {
			fd := fields.Get(i)
			vd := fd
			if fd.IsMap() {
				vd = fd.MapValue()
			}
			f := scanField{fd: fd, deprecated: isDeprecated(fd.Options())}
			switch vd.Kind() {
			case protoreflect.EnumKind:
				f.enumDeprecated = hasDeprecatedValue(vd.Enum())
			case protoreflect.MessageKind, protoreflect.GroupKind:
				f.elem = gather(vd.Message())
			}
			if f.deprecated || f.enumDeprecated {
				t.may = true
			}
			t.fields = append(t.fields, f)
		}
		return t
	}
	root := gather(md)
	for changed := true; changed; {
		changed = false
		for _, p := range todo {
			if p.t.may {
				continue
			}
			for _, f := range p.t.fields {
				if f.elem != nil && f.elem.may {
					p.t.may, changed = true, true
					break
				}
			}
		}
	}
	// Keep only the fields worth a look.
	for _, p := range todo {
		kept := p.t.fields[:0]
		for _, f := range p.t.fields {
			if f.elem != nil && !f.elem.may {
				f.elem = nil
			}
			if f.deprecated || f.enumDeprecated || f.elem != nil {
				kept = append(kept, f)
			}
		}
		p.t.fields = kept
	}
	return root
}

// hasDeprecatedValue reports whether an enum has a deprecated value.
func hasDeprecatedValue(ed protoreflect.EnumDescriptor) bool {
	values := ed.Values()
	for i := range values.Len() {
		if isDeprecated(values.Get(i).Options()) {
			return true
		}
	}
	return false
}
