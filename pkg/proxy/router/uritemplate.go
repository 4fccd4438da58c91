package router

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// The path extensions' names and categories (Envoy's
// source/extensions/path), in the proxy. spelling. Package router
// implements both: a uri_template matcher is a route's path matcher, and
// its rewriter reuses the matcher's variables.
const (
	PathMatchCategory      = "envoy.path.match"
	PathRewriteCategory    = "envoy.path.rewrite"
	URITemplateMatchName   = "proxy.path.match.uri_template.uri_template_matcher"
	URITemplateRewriteName = "proxy.path.rewrite.uri_template.uri_template_rewriter"
)

// The limits of Envoy's uri_template library.
const (
	maxTemplateVariables = 5
	maxVariableNameLen   = 16
)

// templateLiteral are the bytes a template literal may hold: RFC 3986's
// pchar without '*' and '=' (unreserved, pct-encoded, sub-delims, ':'
// and '@'), as Envoy's kLiteral.
const templateLiteral = `a-zA-Z0-9\-._~%!$&'()+,;:@`

// The regexes of the two globs: '*' is one path segment, '**' any number
// of them (zero included).
const (
	pathGlobRegex = "[" + templateLiteral + "]+"
	textGlobRegex = "[" + templateLiteral + "/]*"
)

var (
	literalRe        = regexp.MustCompile("^[" + templateLiteral + "]+$")
	rewriteLiteralRe = regexp.MustCompile("^[" + templateLiteral + "/]+$")
	variableNameRe   = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_]*$`)
	printableRe      = regexp.MustCompile(`^/[[:graph:]]*$`)
)

// URITemplate is a compiled path_template of the uri_template matcher,
// such as "/videos/{id}/**.m3u8": '*' matches one path segment, '**' the
// rest of the path, "{name}" or "{name=pattern}" captures what it
// matches for the rewriter. It matches the whole path without its query
// string and fragment, case-sensitively.
type URITemplate struct {
	// Template is the path_template as configured.
	Template string
	re       *regexp.Regexp
	// literal is the template's first segment ("/videos") when it is a
	// literal, which a route table keys the route by; "" otherwise.
	literal string
}

// CompileURITemplate parses a path_template with the grammar and limits
// of Envoy's uri_template library (at most 5 variables, names of up to
// 16 characters, nothing but a literal after a '**').
func CompileURITemplate(tmpl string) (*URITemplate, error) {
	re, first, err := templateRegex(tmpl)
	if err != nil {
		return nil, fmt.Errorf("%q is invalid: %w", tmpl, err)
	}
	compiled, err := regexp.Compile("^" + re + "$")
	if err != nil {
		return nil, fmt.Errorf("%q is invalid: %w", tmpl, err)
	}
	return &URITemplate{Template: tmpl, re: compiled, literal: first}, nil
}

// Match reports whether path (query string allowed) matches the template,
// as Envoy's UriTemplateMatcher::match.
func (t *URITemplate) Match(path string) bool { return t.re.MatchString(pathOnly(path)) }

// templateState follows a template's globs while it is parsed.
type templateState struct {
	vars         []string
	seenTextGlob bool
}

// glob records an operator ('*' or '**'); no glob may follow a '**'.
func (st *templateState) glob(op string) error {
	if st.seenTextGlob {
		return errors.New("glob after text glob")
	}
	st.seenTextGlob = op == "**"
	return nil
}

// templateRegex turns a path_template into a regex and returns its first
// segment when that is a literal.
func templateRegex(tmpl string) (string, string, error) {
	if !printableRe.MatchString(tmpl) {
		return "", "", errors.New("a template is '/' then printable characters")
	}
	var st templateState
	var segs []string
	first := ""
	rest := tmpl[1:]
	suffix := ""
	for rest != "" {
		var seg string
		var err error
		switch rest[0] {
		case '*':
			seg, rest, err = st.operator(rest)
		case '{':
			seg, rest, err = st.variable(rest)
		default:
			var lit string
			lit, rest, err = consumeLiteral(rest)
			seg = regexp.QuoteMeta(lit)
			if len(segs) == 0 {
				first = "/" + lit
			}
		}
		if err != nil {
			return "", "", err
		}
		segs = append(segs, seg)
		if rest == "" {
			break
		}
		if rest == "/" {
			// A trailing '/'.
			segs = append(segs, "")
			break
		}
		if rest[0] == '/' {
			rest = rest[1:]
			continue
		}
		// A suffix such as ".m3u8" after the last segment.
		lit, after, err := consumeLiteral(rest)
		if err != nil {
			return "", "", err
		}
		if after != "" {
			return "", "", errors.New("a suffix must end the template")
		}
		suffix = regexp.QuoteMeta(lit)
		break
	}
	return "/" + strings.Join(segs, "/") + suffix, first, nil
}

// consumeLiteral takes a literal up to the next '/'.
func consumeLiteral(s string) (lit, rest string, err error) {
	lit, rest = s, ""
	if i := strings.IndexByte(s, '/'); i >= 0 {
		lit, rest = s[:i], s[i:]
	}
	if lit == "" {
		return "", "", errors.New("invalid literal \"\": empty path segment")
	}
	if !literalRe.MatchString(lit) {
		return "", "", fmt.Errorf("invalid literal %q", lit)
	}
	return lit, rest, nil
}

// operator takes a '*' or '**'.
func (st *templateState) operator(s string) (string, string, error) {
	op, re := "*", pathGlobRegex
	if strings.HasPrefix(s, "**") {
		op, re = "**", textGlobRegex
	}
	return re, s[len(op):], st.glob(op)
}

// variable takes a "{name}" or "{name=pattern}", where the pattern is
// globs and literals separated by '/'.
func (st *templateState) variable(s string) (string, string, error) {
	end := strings.IndexByte(s, '}')
	if len(s) < 2 || end < 0 {
		return "", "", errors.New("unmatched variable bracket")
	}
	body, rest := s[1:end], s[end+1:]
	name, patt, hasPatt := strings.Cut(body, "=")
	if !variableNameRe.MatchString(name) {
		return "", "", fmt.Errorf("invalid variable name %q", name)
	}
	switch {
	case len(st.vars) >= maxTemplateVariables:
		return "", "", fmt.Errorf("more than %d variables", maxTemplateVariables)
	case len(name) > maxVariableNameLen:
		return "", "", fmt.Errorf("variable name %q is longer than %d characters", name, maxVariableNameLen)
	}
	for _, v := range st.vars {
		if v == name {
			return "", "", fmt.Errorf("repeated variable name %q", name)
		}
	}
	st.vars = append(st.vars, name)
	if !hasPatt {
		// A variable with no pattern is a '*'.
		if st.seenTextGlob {
			return "", "", errors.New("implicit variable path glob after text glob")
		}
		return "(?P<" + name + ">" + pathGlobRegex + ")", rest, nil
	}
	if patt == "" {
		return "", "", errors.New("empty variable match")
	}
	var parts []string
	for patt != "" {
		var part string
		var err error
		if patt[0] == '*' {
			part, patt, err = st.operator(patt)
		} else {
			var lit string
			lit, patt, err = consumeLiteral(patt)
			part = regexp.QuoteMeta(lit)
		}
		if err != nil {
			return "", "", err
		}
		parts = append(parts, part)
		if patt != "" {
			if patt[0] != '/' || len(patt) == 1 {
				return "", "", fmt.Errorf("invalid variable match in %q", body)
			}
			patt = patt[1:]
		}
	}
	return "(?P<" + name + ">" + strings.Join(parts, "/") + ")", rest, nil
}

// TemplateRewrite is a compiled path_template_rewrite: literals and the
// matcher's variables, such as "/{lang}/videos/{id}".
type TemplateRewrite struct {
	// Template is the path_template_rewrite as configured.
	Template string
	// segments are the literals and variables in order.
	segments []rewriteSegment
	match    *URITemplate
}

// rewriteSegment is a literal, or a variable (name set) whose value is
// capture group of the matcher's regex.
type rewriteSegment struct {
	literal string
	name    string
	group   int
}

// CompileTemplateRewrite parses a path_template_rewrite; with a matcher,
// it also resolves its variables, which Envoy requires the matcher to
// capture.
func CompileTemplateRewrite(tmpl string, match *URITemplate) (*TemplateRewrite, error) {
	if tmpl == "" || tmpl[0] != '/' {
		return nil, fmt.Errorf("%q is invalid: a rewrite starts with '/'", tmpl)
	}
	if strings.Contains(tmpl, "//") {
		return nil, fmt.Errorf("%q is invalid: '//' is not allowed", tmpl)
	}
	rw := &TemplateRewrite{Template: tmpl, match: match}
	rest := tmpl
	for rest != "" {
		lit, after, hasVar := strings.Cut(rest, "{")
		if lit != "" {
			if !rewriteLiteralRe.MatchString(lit) {
				return nil, fmt.Errorf("%q is invalid: invalid literal %q", tmpl, lit)
			}
			rw.segments = append(rw.segments, rewriteSegment{literal: lit})
		}
		if !hasVar {
			break
		}
		name, next, ok := strings.Cut(after, "}")
		if !ok {
			return nil, fmt.Errorf("%q is invalid: unmatched variable bracket", tmpl)
		}
		if !variableNameRe.MatchString(name) {
			return nil, fmt.Errorf("%q is invalid: invalid variable name %q", tmpl, name)
		}
		rw.segments = append(rw.segments, rewriteSegment{name: name})
		rest = next
	}
	if match == nil {
		return rw, nil
	}
	for i := range rw.segments {
		s := &rw.segments[i]
		if s.name == "" {
			continue
		}
		if s.group = match.re.SubexpIndex(s.name); s.group < 0 {
			return nil, fmt.Errorf("mismatch between variables in path_match_policy %s and path_rewrite_policy %s", match.Template, tmpl)
		}
	}
	return rw, nil
}

// Rewrite rewrites path (query string included, and kept) with the
// matcher's captures; ok is false when the matcher does not match it, and
// then Envoy leaves the path as it is.
func (rw *TemplateRewrite) Rewrite(path string) (string, bool) {
	p := pathOnly(path)
	m := rw.match.re.FindStringSubmatchIndex(p)
	if m == nil {
		return path, false
	}
	var b strings.Builder
	for _, s := range rw.segments {
		if s.name == "" {
			b.WriteString(s.literal)
			continue
		}
		b.WriteString(p[m[2*s.group]:m[2*s.group+1]])
	}
	b.WriteString(path[len(p):])
	return b.String(), true
}
