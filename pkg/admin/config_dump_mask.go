package admin

import (
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
)

// anyFullName is the message that packs configuration of another type.
const anyFullName protoreflect.FullName = "google.protobuf.Any"

// fieldMask is a parsed google.protobuf.FieldMask (?mask=): comma-separated
// paths of proto field names, such as "cluster.name,last_updated".
//
// It behaves like protobuf's FieldMaskUtil, which Envoy uses: a path may
// end on any field (a message or list is then kept whole) but may not go
// through a list or a map. Unlike it, a path may go through a
// google.protobuf.Any holding a known type: "cluster.name" on a dumped
// cluster keeps the name inside the packed Cluster. Envoy does that only
// for the Any at the top of each ?resource= element.
type fieldMask struct {
	paths []string
	root  *maskNode
}

// maskNode is one field of the mask tree. A node without children keeps
// its whole field.
type maskNode struct {
	children map[string]*maskNode
}

// parseFieldMask splits s into paths, skipping empty ones as protobuf's
// FieldMaskUtil::FromString does.
func parseFieldMask(s string) fieldMask {
	m := fieldMask{root: &maskNode{children: map[string]*maskNode{}}}
	for p := range strings.SplitSeq(s, ",") {
		if p == "" {
			continue
		}
		m.paths = append(m.paths, p)
		m.root.add(strings.Split(p, "."))
	}
	return m
}

// add inserts one path. A shorter path covering a longer one wins: "a"
// keeps all of a, whatever "a.b" says.
func (n *maskNode) add(segments []string) {
	for _, s := range segments {
		child, ok := n.children[s]
		if ok && child.children == nil {
			return // an ancestor is kept whole already
		}
		if !ok {
			child = &maskNode{children: map[string]*maskNode{}}
			n.children[s] = child
		}
		n = child
	}
	n.children = nil
}

// empty reports whether the mask has no path: it then keeps everything,
// as an empty FieldMask does in protobuf.
func (m fieldMask) empty() bool { return len(m.paths) == 0 }

// debugString renders the mask as protobuf's DebugString does, which
// Envoy's error messages quote: one `paths: "..."` line per path.
func (m fieldMask) debugString() string {
	var b strings.Builder
	for _, p := range m.paths {
		b.WriteString(`paths: "`)
		b.WriteString(cEscape(p))
		b.WriteString("\"\n")
	}
	return b.String()
}

// apply checks every path against msg's type and, when all are valid,
// removes every field the mask does not name. An invalid mask leaves msg
// untouched and is reported with the first bad path.
func (m fieldMask) apply(msg protoreflect.Message) error {
	if m.empty() {
		return nil
	}
	for _, p := range m.paths {
		if err := checkPath(msg, strings.Split(p, ".")); err != nil {
			return fmt.Errorf("mask path %q: %w", p, err)
		}
	}
	return trim(msg, m.root)
}

// checkPath verifies that segments name fields from msg's type down. Inside
// an Any the packed type decides; when that Any is unset the rest of the
// path cannot be checked and is accepted, as Envoy does.
func checkPath(msg protoreflect.Message, segments []string) error {
	for i, s := range segments {
		fd := msg.Descriptor().Fields().ByName(protoreflect.Name(s))
		if fd == nil {
			return fmt.Errorf("no field %q in %s", s, msg.Descriptor().FullName())
		}
		if i == len(segments)-1 {
			return nil
		}
		if fd.IsList() || fd.IsMap() || fd.Message() == nil {
			return fmt.Errorf("field %q cannot be indexed into", s)
		}
		next := msg.Get(fd).Message() // a read-only empty message when unset
		if fd.Message().FullName() == anyFullName {
			if !msg.Has(fd) {
				return nil
			}
			inner, err := unpackAny(next)
			if err != nil {
				return err
			}
			next = inner.ProtoReflect()
		}
		msg = next
	}
	return nil
}

// trim clears every field of msg that node does not name, and trims the
// named messages that node lists children for.
func trim(msg protoreflect.Message, node *maskNode) error {
	var drop, nested []protoreflect.FieldDescriptor
	msg.Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		switch child, ok := node.children[string(fd.Name())]; {
		case !ok:
			drop = append(drop, fd)
		case child.children != nil:
			// checkPath allowed children only on singular messages.
			nested = append(nested, fd)
		}
		return true
	})
	for _, fd := range drop {
		msg.Clear(fd)
	}
	msg.SetUnknown(nil)
	for _, fd := range nested {
		if err := trimNested(msg.Mutable(fd).Message(), node.children[string(fd.Name())]); err != nil {
			return err
		}
	}
	return nil
}

// trimNested trims a nested message, unpacking an Any to trim what it
// holds.
func trimNested(msg protoreflect.Message, node *maskNode) error {
	if msg.Descriptor().FullName() != anyFullName {
		return trim(msg, node)
	}
	inner, err := unpackAny(msg)
	if err != nil {
		return err
	}
	if err := trim(inner.ProtoReflect(), node); err != nil {
		return err
	}
	return repackAny(msg, inner)
}

// unpackAny decodes the message an Any holds, from the types linked into
// the binary.
func unpackAny(msg protoreflect.Message) (proto.Message, error) {
	a, ok := msg.Interface().(*anypb.Any)
	if !ok {
		return nil, fmt.Errorf("unexpected %s implementation %T", anyFullName, msg.Interface())
	}
	inner, err := a.UnmarshalNew()
	if err != nil {
		return nil, fmt.Errorf("unpack %s: %w", a.GetTypeUrl(), err)
	}
	return inner, nil
}

// repackAny stores inner back into the Any msg.
func repackAny(msg protoreflect.Message, inner proto.Message) error {
	a, ok := msg.Interface().(*anypb.Any)
	if !ok {
		return fmt.Errorf("unexpected %s implementation %T", anyFullName, msg.Interface())
	}
	return anypb.MarshalFrom(a, inner, proto.MarshalOptions{Deterministic: true})
}

// cEscape escapes s as protobuf's text format does (C escapes, octal for
// other non-printable bytes).
func cEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '"':
			b.WriteString(`\"`)
		case '\'':
			b.WriteString(`\'`)
		case '\\':
			b.WriteString(`\\`)
		default:
			if c < 0x20 || c >= 0x7f {
				b.WriteByte('\\')
				b.WriteString(strconv.FormatUint(uint64(c)|0o1000, 8)[1:])
				continue
			}
			b.WriteByte(c)
		}
	}
	return b.String()
}
