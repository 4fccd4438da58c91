package accesslog

import (
	"strconv"
)

// DefaultFormat is Envoy's default access-log format, used when a file
// access log configures none.
const DefaultFormat = `[%START_TIME%] "%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%" ` +
	`%RESPONSE_CODE% %RESPONSE_FLAGS% %BYTES_RECEIVED% %BYTES_SENT% %DURATION% ` +
	`%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% "%REQ(X-FORWARDED-FOR)%" "%REQ(USER-AGENT)%" ` +
	`"%REQ(X-REQUEST-ID)%" "%REQ(:AUTHORITY)%" "%UPSTREAM_HOST%"` + "\n"

// Formatter renders entries as one access-log line each. It is immutable
// (but for START_TIME's cache of the current second's text) and safe for
// concurrent use.
type Formatter struct {
	// Exactly one of text and json is set.
	text *textFormat
	json *jsonFormat
}

// textFormat is a compiled text format: literal text and operators in
// order.
type textFormat struct {
	parts []part
	// omitEmpty prints missing values as nothing instead of "-".
	omitEmpty bool
	// defaultStart is set when the format is DefaultFormat (see
	// isDefaultFormat): its START_TIME layout, for appendDefault.
	defaultStart *timeLayout
}

// part is a literal (op == opLiteral) or one command operator.
type part struct {
	op      opCode
	literal string
	// header and alt are the lower-case header names of REQ/RESP/TRAILER.
	header, alt string
	// maxLen truncates the value to that many bytes; -1 is no limit.
	maxLen int
	// layout is START_TIME's compiled strftime layout.
	layout *timeLayout
	// numeric values are JSON numbers in typed JSON formats.
	numeric bool
	// metadata is a metadata operator's namespace and keys.
	metadata *metadataRef
	// filterState is FILTER_STATE's key and form.
	filterState *filterStateRef
	// ext is a formatter extension's operator.
	ext Provider
	// tls is a TLS operator's field, of the upstream connection when
	// upstreamTLS is set.
	tls         tlsField
	upstreamTLS bool
}

// Text compiles a text format string. With omitEmpty, missing values print
// as nothing instead of "-". Errors name the offending operator.
func Text(format string, omitEmpty bool) (*Formatter, error) {
	return text(format, omitEmpty, nil)
}

// TextWith is Text with the operators of the formatter extensions f.
func TextWith(format string, omitEmpty bool, f Formatters) (*Formatter, error) {
	return text(format, omitEmpty, f)
}

// text is Text with the operators of formatter extensions.
func text(format string, omitEmpty bool, parsers []CommandParser) (*Formatter, error) {
	parts, err := parse(format, parsers)
	if err != nil {
		return nil, err
	}
	t := &textFormat{parts: parts, omitEmpty: omitEmpty}
	if isDefaultFormat(format, omitEmpty, parts) {
		for i := range parts {
			if parts[i].op == opStartTime {
				t.defaultStart = parts[i].layout
			}
		}
	}
	return &Formatter{text: t}, nil
}

// Default returns a formatter for DefaultFormat.
func Default() *Formatter {
	f, err := Text(DefaultFormat, false)
	if err != nil {
		// DefaultFormat is a constant that the tests parse.
		panic("accesslog: default format: " + err.Error())
	}
	return f
}

// Append appends e's line to dst and returns the extended buffer. A text
// format prints exactly what the format says (the default format ends
// with a newline); a JSON format prints one object and a newline. It
// allocates nothing when dst has room.
func (f *Formatter) Append(dst []byte, e *Entry) []byte {
	if f.json != nil {
		return f.json.append(dst, e)
	}
	return f.text.append(dst, e)
}

// AppendValue is Append for header values: operators whose value is
// missing print nothing. Package router uses it for the % operators of
// request_headers_to_add and response_headers_to_add.
func (f *Formatter) AppendValue(dst []byte, e *Entry) []byte {
	if f.text == nil {
		return f.Append(dst, e)
	}
	for i := range f.text.parts {
		dst, _ = f.text.parts[i].append(dst, e)
	}
	return dst
}

// Literal reports whether the format is plain text without operators,
// and that text; callers use it to skip formatting entirely.
func (f *Formatter) Literal() (string, bool) {
	if f.text == nil {
		return "", false
	}
	switch len(f.text.parts) {
	case 0:
		return "", true
	case 1:
		if f.text.parts[0].op == opLiteral {
			return f.text.parts[0].literal, true
		}
	}
	return "", false
}

func (t *textFormat) append(dst []byte, e *Entry) []byte {
	if t.defaultStart != nil {
		return appendDefault(dst, e, t.defaultStart)
	}
	return t.appendParts(dst, e)
}

// appendParts renders the format part by part.
func (t *textFormat) appendParts(dst []byte, e *Entry) []byte {
	for i := range t.parts {
		p := &t.parts[i]
		// Literals are half of a format's parts: appended here, without
		// the call and the bookkeeping of an operator.
		if p.op == opLiteral {
			dst = append(dst, p.literal...)
			continue
		}
		var ok bool
		dst, ok = p.append(dst, e)
		if !ok && !t.omitEmpty {
			dst = append(dst, '-')
		}
	}
	return dst
}

// append appends the part's value and reports whether it had one; a
// missing value appends nothing.
func (p *part) append(dst []byte, e *Entry) ([]byte, bool) {
	if p.op == opLiteral {
		return append(dst, p.literal...), true
	}
	start := len(dst)
	dst, ok := p.op.value(p, dst, e)
	if !ok {
		return dst[:start], false
	}
	if p.maxLen >= 0 && len(dst)-start > p.maxLen {
		dst = dst[:start+p.maxLen]
	}
	return dst, true
}

// appendMillis appends d in whole milliseconds, as Envoy's durations print.
func appendMillis(dst []byte, ns int64) []byte {
	return strconv.AppendInt(dst, ns/1e6, 10)
}

// Parts is the number of literal texts and operators of a text format
// (0 for a JSON one); the rate limit filter's hits_addend format must
// have exactly one, as Envoy requires.
func (f *Formatter) Parts() int {
	if f.text == nil {
		return 0
	}
	return len(f.text.parts)
}
