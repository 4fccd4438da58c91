package logging

import (
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/go-logr/logr"
)

// noValue stands in for the missing value of an odd-length key/value list.
const noValue = "<no-value>"

// appendPayload renders what the message flags print: the message, the
// error, the logger's WithValues pairs (pre-rendered) and the call's pairs,
// each pair as " key=value".
func appendPayload(dst []byte, msg string, err error, values []byte, kvs []any) []byte {
	dst = append(dst, msg...)
	if err != nil {
		dst = append(dst, " error="...)
		dst = strconv.AppendQuote(dst, errorText(err))
	}
	dst = append(dst, values...)
	return appendKeyValues(dst, kvs)
}

// appendKeyValues renders pairs as " key=value". Values with spaces,
// quotes, '=', backslashes or unprintable characters, and empty values, are
// quoted with Go's %q rules so that a record stays unambiguous.
func appendKeyValues(dst []byte, kvs []any) []byte {
	for i := 0; i < len(kvs); i += 2 {
		dst = append(dst, ' ')
		if k, ok := kvs[i].(string); ok {
			dst = appendMaybeQuoted(dst, k)
		} else {
			dst = appendMaybeQuoted(dst, safeSprint(kvs[i]))
		}
		dst = append(dst, '=')
		if i+1 >= len(kvs) {
			dst = append(dst, noValue...)
			continue
		}
		dst = appendValue(dst, kvs[i+1])
	}
	return dst
}

// appendValue renders one value; common types take a path that does not
// allocate.
func appendValue(dst []byte, v any) []byte {
	if m, ok := v.(logr.Marshaler); ok {
		v = safeMarshal(m)
	}
	switch v := v.(type) {
	case string:
		return appendMaybeQuoted(dst, v)
	case bool:
		return strconv.AppendBool(dst, v)
	case int:
		return strconv.AppendInt(dst, int64(v), 10)
	case int8:
		return strconv.AppendInt(dst, int64(v), 10)
	case int16:
		return strconv.AppendInt(dst, int64(v), 10)
	case int32:
		return strconv.AppendInt(dst, int64(v), 10)
	case int64:
		return strconv.AppendInt(dst, v, 10)
	case uint:
		return strconv.AppendUint(dst, uint64(v), 10)
	case uint8:
		return strconv.AppendUint(dst, uint64(v), 10)
	case uint16:
		return strconv.AppendUint(dst, uint64(v), 10)
	case uint32:
		return strconv.AppendUint(dst, uint64(v), 10)
	case uint64:
		return strconv.AppendUint(dst, v, 10)
	case float32:
		return strconv.AppendFloat(dst, float64(v), 'g', -1, 32)
	case float64:
		return strconv.AppendFloat(dst, v, 'g', -1, 64)
	case error:
		return strconv.AppendQuote(dst, errorText(v))
	case nil:
		return append(dst, "<nil>"...)
	default:
		return appendMaybeQuoted(dst, safeSprint(v))
	}
}

// appendMaybeQuoted appends s as it is, or %q-quoted when it needs quotes.
func appendMaybeQuoted(dst []byte, s string) []byte {
	if needsQuotes(s) {
		return strconv.AppendQuote(dst, s)
	}
	return append(dst, s...)
}

func needsQuotes(s string) bool {
	if s == "" {
		return true
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c <= ' ' || c == '"' || c == '=' || c == '\\' || c == 0x7f {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return true
		}
		i += size
	}
	return false
}

// errorText is err.Error(), surviving a panicking Error method (a nil
// pointer receiver, typically), as fmt does.
func errorText(err error) string { return safeSprint(err) }

// safeSprint is fmt.Sprint, which already turns a panic in a String or
// Error method into text instead of crashing the logging goroutine.
func safeSprint(v any) string { return fmt.Sprint(v) }

// safeMarshal calls MarshalLog, turning a panic into a value: a logging
// call must never bring the proxy down.
func safeMarshal(m logr.Marshaler) (v any) {
	defer func() {
		if r := recover(); r != nil {
			v = fmt.Sprintf("<panic: %v>", r)
		}
	}()
	return m.MarshalLog()
}
