package zipkin

import (
	"context"
	"encoding/binary"
	"strconv"
	"unicode/utf8"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// exporter posts batches as a JSON v2 list.
type exporter struct {
	p       *tracing.Poster
	service string
	// buf is the last request, reused: the poster writes the body before
	// Post returns and keeps no reference to it.
	buf []byte
}

// Export implements tracing.Exporter.
func (e *exporter) Export(ctx context.Context, spans []*tracing.Span) error {
	e.buf = appendSpans(e.buf[:0], e.service, spans)
	return e.p.Post(ctx, "application/json", e.buf)
}

// appendSpans appends spans as a Zipkin JSON v2 list: for each, traceId,
// parentId (when it has a parent), id, kind (SERVER or CLIENT), name,
// timestamp and duration in microseconds, localEndpoint's serviceName,
// annotations (its logs, as Envoy's Zipkin tracer reports them), tags and
// shared (when set). The JSON is written straight into b: encoding/json
// built a map of the tags and reflected over a struct for every span.
func appendSpans(b []byte, service string, spans []*tracing.Span) []byte {
	b = append(b, '[')
	for i, s := range spans {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"traceId":"`...)
		b = appendTraceID(b, s.Trace)
		if !s.Parent.IsZero() {
			b = append(b, `","parentId":"`...)
			b = s.Parent.AppendHex(b)
		}
		b = append(b, `","id":"`...)
		b = s.ID.AppendHex(b)
		if s.Kind == tracing.Client {
			b = append(b, `","kind":"CLIENT","name":`...)
		} else {
			b = append(b, `","kind":"SERVER","name":`...)
		}
		b = appendString(b, s.Name)
		b = append(b, `,"timestamp":`...)
		b = strconv.AppendInt(b, s.Start.UnixMicro(), 10)
		b = append(b, `,"duration":`...)
		b = strconv.AppendInt(b, s.End.Sub(s.Start).Microseconds(), 10)
		b = append(b, `,"localEndpoint":{"serviceName":`...)
		b = appendString(b, service)
		b = append(b, '}')
		if len(s.Logs) > 0 {
			b = append(b, `,"annotations":[`...)
			for j, l := range s.Logs {
				if j > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"timestamp":`...)
				b = strconv.AppendInt(b, l.Time.UnixMicro(), 10)
				b = append(b, `,"value":`...)
				b = appendString(b, l.Event)
				b = append(b, '}')
			}
			b = append(b, ']')
		}
		if len(s.Tags) > 0 {
			// SetTag keeps one value per key: no key repeats.
			b = append(b, `,"tags":{`...)
			for j, t := range s.Tags {
				if j > 0 {
					b = append(b, ',')
				}
				b = appendString(b, t.Key)
				b = append(b, ':')
				b = appendString(b, t.Value)
			}
			b = append(b, '}')
		}
		if s.Shared {
			b = append(b, `,"shared":true`...)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendTraceID appends a trace id as Zipkin writes it: 32 digits when
// 128-bit, else 16 (traceIDHex).
func appendTraceID(b []byte, t tracing.TraceID) []byte {
	if [8]byte(t[:8]) == [8]byte{} {
		return tracing.AppendHex64(b, binary.BigEndian.Uint64(t[8:]))
	}
	return t.AppendHex(b)
}

// appendString appends s as a JSON string, escaped as encoding/json does:
// quotes, backslashes and control characters, <, > and & (HTML-safe),
// U+2028 and U+2029, and invalid UTF-8 replaced by U+FFFD.
func appendString(b []byte, s string) []byte {
	const digits = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', digits[c>>4], digits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', digits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
