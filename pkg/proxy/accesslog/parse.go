package accesslog

import (
	"fmt"
	"strconv"
	"strings"
)

// parse splits a format string into literals and operators, as Envoy's
// substitution format parser does: %NAME%, %NAME(args)%, %NAME(args):Z%
// and %NAME:Z%, with "%%" standing for a literal "%". Errors name the
// operator and its byte offset. The formatter extensions' parsers are
// asked first, as Envoy asks a format's formatters before its built-in
// operators.
func parse(format string, parsers []CommandParser) ([]part, error) {
	var parts []part
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			parts = append(parts, part{op: opLiteral, literal: lit.String(), maxLen: -1})
			lit.Reset()
		}
	}
	for i := 0; i < len(format); {
		c := format[i]
		if c != '%' {
			lit.WriteByte(c)
			i++
			continue
		}
		if i+1 < len(format) && format[i+1] == '%' {
			lit.WriteByte('%')
			i += 2
			continue
		}
		p, n, err := parseOperator(format[i:], parsers)
		if err != nil {
			return nil, fmt.Errorf("at offset %d: %w", i, err)
		}
		flush()
		parts = append(parts, p)
		i += n
	}
	flush()
	return parts, nil
}

// parseOperator parses the operator at the start of s (which begins with
// "%") and returns it with the number of bytes it took.
func parseOperator(s string, parsers []CommandParser) (part, int, error) {
	i := 1
	for i < len(s) && isCommandByte(s[i]) {
		i++
	}
	name := s[1:i]
	if name == "" {
		return part{}, 0, fmt.Errorf("%q does not start a command operator (write %%%% for a literal %%)", abbreviate(s))
	}
	var args string
	hasArgs := false
	if i < len(s) && s[i] == '(' {
		end := strings.IndexByte(s[i:], ')')
		if end < 0 {
			return part{}, 0, fmt.Errorf("%%%s: missing ')'", name)
		}
		args, hasArgs = s[i+1:i+end], true
		i += end + 1
	}
	maxLen := -1
	if i < len(s) && s[i] == ':' {
		j := i + 1
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		n, err := strconv.Atoi(s[i+1 : j])
		if err != nil {
			return part{}, 0, fmt.Errorf("%%%s: the length after ':' must be a number", name)
		}
		maxLen = n
		i = j
	}
	if i >= len(s) || s[i] != '%' {
		return part{}, 0, fmt.Errorf("%%%s: missing the closing '%%'", name)
	}
	i++

	ext, err := parseExtension(parsers, name, args, hasArgs, maxLen)
	if err != nil {
		return part{}, 0, fmt.Errorf("%%%s%%: %w", name, err)
	}
	if ext != nil {
		return part{op: opExtension, ext: ext, maxLen: maxLen}, i, nil
	}
	def, ok := operators[name]
	field, upstream, isTLS := tlsOperator(name)
	if isTLS && !ok {
		def, ok = operator{op: opTLS}, true
		if field == tlsPeerCertVStart || field == tlsPeerCertVEnd {
			// A time, with START_TIME's optional format.
			def.args = argOptional
		}
	}
	if ext, needs := extensionOperators[name]; !ok && needs {
		// Envoy answers "Not supported field in StreamInfo"; say why.
		return part{}, 0, fmt.Errorf("command operator %%%s%% needs the formatter extension %s in the format's formatters", name, ext)
	}
	if !ok {
		return part{}, 0, fmt.Errorf("command operator %%%s%% is not supported by Outrigger", name)
	}
	p := part{op: def.op, maxLen: maxLen, numeric: def.numeric}
	if def.op == opTLS {
		p.tls, p.upstreamTLS = field, upstream
	}
	switch def.args {
	case argNone:
		if hasArgs {
			return part{}, 0, fmt.Errorf("%%%s%% takes no arguments", name)
		}
	case argHeader:
		if !hasArgs {
			return part{}, 0, fmt.Errorf("%%%s(...)%% needs a header name", name)
		}
		h, alt, err := parseHeaderArgs(args)
		if err != nil {
			return part{}, 0, fmt.Errorf("%%%s(%s)%%: %w", name, args, err)
		}
		p.header, p.alt = h, alt
	case argOptional:
		layout, err := compileTimeLayout(args, hasArgs)
		if err != nil {
			return part{}, 0, fmt.Errorf("%%%s(%s)%%: %w", name, args, err)
		}
		p.layout = layout
	case argMetadata:
		md, err := parseMetadataOperator(name, args, hasArgs, maxLen)
		if err != nil {
			return part{}, 0, err
		}
		p.metadata = md
	case argFilterState:
		fs, err := parseFilterStateOperator(args, hasArgs)
		if err != nil {
			return part{}, 0, err
		}
		p.filterState = fs
	}
	return p, i, nil
}

// parseHeaderArgs parses "X" or "X?Y" into lower-case header names.
func parseHeaderArgs(args string) (string, string, error) {
	main, alt, hasAlt := strings.Cut(args, "?")
	if strings.Contains(alt, "?") {
		return "", "", fmt.Errorf("more than one alternative header")
	}
	if main == "" || (hasAlt && alt == "") {
		return "", "", fmt.Errorf("empty header name")
	}
	for _, h := range []string{main, alt} {
		if strings.ContainsAny(h, " \t\r\n%") {
			return "", "", fmt.Errorf("invalid header name %q", h)
		}
	}
	return strings.ToLower(main), strings.ToLower(alt), nil
}

// isCommandByte reports whether c may appear in an operator name.
func isCommandByte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// abbreviate keeps error messages short for long formats.
func abbreviate(s string) string {
	if len(s) > 20 {
		return s[:20] + "..."
	}
	return s
}
