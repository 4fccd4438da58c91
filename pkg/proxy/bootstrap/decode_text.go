package bootstrap

import (
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// decodeText decodes a text-format (.pb_text) configuration into m.
// prototext reports only the first unknown field and without its path, so a
// small structural parser first walks the input beside m's descriptor to
// find every unknown field and unresolvable Any type with its full path.
// That parser only follows structure; values are left to prototext, and if
// the parser cannot follow the input, prototext's own verdict stands.
func decodeText(data []byte, m proto.Message, r *decodeReport) error {
	walk := &decodeReport{allowUnknown: r.allowUnknown, types: r.types}
	p := textParser{s: textScanner{src: data}, r: walk}
	if err := p.message(m.ProtoReflect().Descriptor(), "", 0, 0); err == nil {
		r.unknown = append(r.unknown, walk.unknown...)
		r.errs = append(r.errs, walk.errs...)
		if r.failed() {
			return nil
		}
	}
	opts := prototext.UnmarshalOptions{DiscardUnknown: r.allowUnknown, Resolver: r.resolver()}
	if err := opts.Unmarshal(data, m); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	return nil
}

// errTextSyntax stops the structural parser; the caller then relies on
// prototext, which describes syntax errors with their position.
var errTextSyntax = errors.New("text format syntax error")

// textParser walks text-format input beside message descriptors.
type textParser struct {
	s textScanner
	r *decodeReport
}

// message parses the fields of a message of type md up to closer ('}' or
// '>'), or to the end of input when closer is 0.
func (p *textParser) message(md protoreflect.MessageDescriptor, path string, closer byte, depth int) error {
	if depth > maxDepth {
		return errTextSyntax
	}
	counts := map[protoreflect.FieldNumber]int{}
	for {
		tok, err := p.s.next()
		if err != nil {
			return err
		}
		switch {
		case tok.kind == textEOF && closer == 0:
			return nil
		case tok.kind == textEOF:
			return errTextSyntax
		case tok.isPunct(closer) && closer != 0:
			return nil
		}
		if err := p.field(md, tok, path, counts, depth); err != nil {
			return err
		}
		if !p.s.acceptPunct(',') {
			p.s.acceptPunct(';')
		}
	}
}

// field parses one field, whose name token is tok, of a message of type md.
func (p *textParser) field(md protoreflect.MessageDescriptor, tok textToken, path string, counts map[protoreflect.FieldNumber]int, depth int) error {
	var (
		name string
		fd   protoreflect.FieldDescriptor
	)
	switch {
	case tok.kind == textWord && isIdentifier(tok.text):
		name = tok.text
		fd = md.Fields().ByTextName(name)
	case tok.isPunct('['):
		typeName, err := p.s.typeName()
		if err != nil {
			return err
		}
		if md.FullName() == anyFullName && strings.Contains(typeName, "/") {
			return p.expandedAny(typeName, path, depth)
		}
		name = "[" + typeName + "]"
		fd = extensionField(md, protoreflect.FullName(typeName))
	default:
		// Field numbers and stray tokens: prototext explains them.
		return errTextSyntax
	}
	p.s.acceptPunct(':')
	if fd == nil {
		// prototext silently skips reserved names (fields that were
		// removed from the API), so they are not reported either.
		if !md.ReservedNames().Has(protoreflect.Name(name)) {
			p.r.unknownField(childPath(path, name))
		}
		return p.skipValue(depth)
	}
	path = childPath(path, string(fd.Name()))
	if (fd.IsList() || fd.IsMap()) && p.s.acceptPunct('[') {
		if p.s.acceptPunct(']') {
			return nil
		}
		for {
			if err := p.element(fd, path, counts, depth); err != nil {
				return err
			}
			if p.s.acceptPunct(']') {
				return nil
			}
			if !p.s.acceptPunct(',') {
				return errTextSyntax
			}
		}
	}
	return p.element(fd, path, counts, depth)
}

// expandedAny parses "[type.googleapis.com/x.Y] { ... }" inside an Any: the
// embedded message continues the Any's path.
func (p *textParser) expandedAny(typeURL, path string, depth int) error {
	p.s.acceptPunct(':')
	mt, err := p.r.resolver().FindMessageByURL(typeURL)
	if err != nil {
		p.r.fail(path, "unknown type %q", typeURL)
		return p.skipValue(depth)
	}
	closer, err := p.open()
	if err != nil {
		return err
	}
	return p.message(mt.Descriptor(), path, closer, depth+1)
}

// element parses one value of fd: a message or a scalar. Elements of
// repeated fields are numbered across repetitions of the field, as they
// append to one list.
func (p *textParser) element(fd protoreflect.FieldDescriptor, path string, counts map[protoreflect.FieldNumber]int, depth int) error {
	if fd.IsList() || fd.IsMap() {
		path = indexPath(path, counts[fd.Number()])
		counts[fd.Number()]++
	}
	if fd.Message() == nil {
		return p.scalar()
	}
	closer, err := p.open()
	if err != nil {
		return err
	}
	return p.message(fd.Message(), path, closer, depth+1)
}

// open consumes '{' or '<' and returns the matching closer.
func (p *textParser) open() (byte, error) {
	switch {
	case p.s.acceptPunct('{'):
		return '}', nil
	case p.s.acceptPunct('<'):
		return '>', nil
	default:
		return 0, errTextSyntax
	}
}

// scalar consumes one scalar value: a word (number, identifier), a word
// after a lone '-', or adjacent strings (which concatenate).
func (p *textParser) scalar() error {
	tok, err := p.s.next()
	if err != nil {
		return err
	}
	switch tok.kind {
	case textWord:
		if tok.text == "-" {
			if tok, err = p.s.next(); err != nil || tok.kind != textWord {
				return errTextSyntax
			}
		}
		return nil
	case textString:
		for {
			next, err := p.s.peek()
			if err != nil {
				return err
			}
			if next.kind != textString {
				return nil
			}
			if _, err := p.s.next(); err != nil {
				return err
			}
		}
	default:
		return errTextSyntax
	}
}

// skipValue consumes the value of an unknown field without interpreting it.
func (p *textParser) skipValue(depth int) error {
	switch {
	case p.s.acceptPunct('['):
		if p.s.acceptPunct(']') {
			return nil
		}
		for {
			if err := p.skipValue(depth); err != nil {
				return err
			}
			if p.s.acceptPunct(']') {
				return nil
			}
			if !p.s.acceptPunct(',') {
				return errTextSyntax
			}
		}
	case p.s.acceptPunct('{'), p.s.acceptPunct('<'):
		return p.skipBalanced()
	default:
		return p.scalar()
	}
}

// skipBalanced consumes up to the bracket closing one already consumed.
func (p *textParser) skipBalanced() error {
	for open := 1; open > 0; {
		tok, err := p.s.next()
		if err != nil {
			return err
		}
		switch {
		case tok.kind == textEOF:
			return errTextSyntax
		case tok.isPunct('{'), tok.isPunct('<'), tok.isPunct('['):
			open++
		case tok.isPunct('}'), tok.isPunct('>'), tok.isPunct(']'):
			open--
		}
	}
	return nil
}

// isIdentifier reports whether s is a field name rather than a number.
func isIdentifier(s string) bool {
	if s == "" || !(s[0] == '_' || isLetter(s[0])) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !(c == '_' || isLetter(c) || isDigit(c)) {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
