package grpcjsontranscoder

import (
	"errors"
	"fmt"
	"strings"
)

// segKind is the kind of one segment of a path template.
type segKind uint8

// The segment kinds, in the order a lookup prefers them: a literal before
// a single wildcard before a multi-segment one, as the transcoding
// library's path matcher tries them.
const (
	segLiteral segKind = iota
	segStar
	segDoubleStar
)

// segment is one segment of a path template.
type segment struct {
	kind    segKind
	literal string
}

// variable is a template variable: the field path it binds and the
// segments it covers, [start, end) (end is -1 when it runs to a trailing
// "**").
type variable struct {
	fieldPath  []string
	start, end int
}

// template is a compiled google.api.http path template:
// "/" segments [":" verb], each segment "*", "**", a literal or a
// variable "{field.path[=segments]}".
type template struct {
	segments []segment
	verb     string
	vars     []variable
}

// parseTemplate compiles a path template.
func parseTemplate(s string) (*template, error) {
	if !strings.HasPrefix(s, "/") {
		return nil, errors.New("must start with '/'")
	}
	t := &template{}
	rest := s[1:]
	if s == "/" {
		return t, nil
	}
	// The verb is the last ':' outside braces.
	depth, verbAt := 0, -1
	for i := 0; i < len(rest); i++ {
		switch rest[i] {
		case '{':
			depth++
		case '}':
			depth--
		case ':':
			if depth == 0 {
				verbAt = i
			}
		}
	}
	if verbAt >= 0 {
		t.verb = rest[verbAt+1:]
		rest = rest[:verbAt]
		if t.verb == "" || strings.ContainsAny(t.verb, "/{}*") {
			return nil, fmt.Errorf("bad verb %q", t.verb)
		}
	}
	for rest != "" {
		var part string
		if rest[0] == '{' {
			end := strings.IndexByte(rest, '}')
			if end < 0 {
				return nil, errors.New("unclosed '{'")
			}
			part, rest = rest[:end+1], rest[end+1:]
		} else {
			end := strings.IndexByte(rest, '/')
			if end < 0 {
				end = len(rest)
			}
			part, rest = rest[:end], rest[end:]
		}
		if err := t.addPart(part); err != nil {
			return nil, err
		}
		if rest == "" {
			break
		}
		if rest[0] != '/' {
			return nil, fmt.Errorf("unexpected %q after a segment", rest)
		}
		rest = rest[1:]
		if rest == "" {
			return nil, errors.New("empty segment")
		}
	}
	for i, sg := range t.segments {
		if sg.kind == segDoubleStar && i != len(t.segments)-1 {
			return nil, errors.New("'**' must be the last segment")
		}
	}
	return t, nil
}

// addPart adds one "/"-separated part: a segment or a variable.
func (t *template) addPart(part string) error {
	if part == "" {
		return errors.New("empty segment")
	}
	if part[0] != '{' {
		sg, err := parseSegment(part)
		if err != nil {
			return err
		}
		t.segments = append(t.segments, sg)
		return nil
	}
	inner := part[1 : len(part)-1]
	name, sub, hasSub := strings.Cut(inner, "=")
	if name == "" {
		return errors.New("variable without a field path")
	}
	path := strings.Split(name, ".")
	for _, p := range path {
		if !isIdent(p) {
			return fmt.Errorf("bad field path %q", name)
		}
	}
	if !hasSub {
		sub = "*"
	}
	v := variable{fieldPath: path, start: len(t.segments)}
	for p := range strings.SplitSeq(sub, "/") {
		if strings.ContainsAny(p, "{}") {
			return errors.New("nested variable")
		}
		sg, err := parseSegment(p)
		if err != nil {
			return err
		}
		t.segments = append(t.segments, sg)
	}
	v.end = len(t.segments)
	if t.segments[v.end-1].kind == segDoubleStar {
		v.end = -1
	}
	for _, o := range t.vars {
		if strings.Join(o.fieldPath, ".") == name {
			return fmt.Errorf("variable %q bound twice", name)
		}
	}
	t.vars = append(t.vars, v)
	return nil
}

// parseSegment parses "*", "**" or a literal.
func parseSegment(p string) (segment, error) {
	switch p {
	case "":
		return segment{}, errors.New("empty segment")
	case "*":
		return segment{kind: segStar}, nil
	case "**":
		return segment{kind: segDoubleStar}, nil
	}
	if strings.ContainsAny(p, "*{}:") {
		return segment{}, fmt.Errorf("bad literal %q", p)
	}
	return segment{kind: segLiteral, literal: p}, nil
}

// isIdent reports a proto identifier.
func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9') {
			continue
		}
		return false
	}
	return true
}

// binding is one field path and the value the request gives it.
type binding struct {
	fieldPath []string
	value     string
	// query: the binding is a query parameter's (an unknown one is
	// ignore_unknown_query_parameters's business).
	query bool
}

// match matches the request path's segments (still escaped) and verb
// against the template. It returns the variables' bindings, unescaped per
// spec, and a score that ranks matches: the lower, the more specific.
func (t *template) match(parts []string, verb string, spec unescapeSpec) ([]binding, []segKind, bool) {
	if verb != t.verb {
		return nil, nil, false
	}
	n := len(t.segments)
	tail := n > 0 && t.segments[n-1].kind == segDoubleStar
	if tail {
		if len(parts) < n-1 {
			return nil, nil, false
		}
	} else if len(parts) != n {
		return nil, nil, false
	}
	score := make([]segKind, 0, n)
	for i, sg := range t.segments {
		if sg.kind == segDoubleStar {
			score = append(score, segDoubleStar)
			break
		}
		if sg.kind == segLiteral && parts[i] != sg.literal {
			return nil, nil, false
		}
		score = append(score, sg.kind)
	}
	var bs []binding
	for _, v := range t.vars {
		end := v.end
		if end < 0 {
			end = len(parts)
		}
		multi := end-v.start != 1 || v.end < 0
		vals := parts[v.start:end]
		var b strings.Builder
		for i, p := range vals {
			if i > 0 {
				b.WriteByte('/')
			}
			if multi {
				b.WriteString(spec.unescape(p))
			} else {
				b.WriteString(unescapeAll(p))
			}
		}
		bs = append(bs, binding{fieldPath: v.fieldPath, value: b.String()})
	}
	return bs, score, true
}

// moreSpecific reports whether score a ranks before b.
func moreSpecific(a, b []segKind) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return len(a) > len(b)
}
