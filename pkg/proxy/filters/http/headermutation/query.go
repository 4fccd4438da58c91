package headermutation

import (
	"fmt"
	"slices"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// queryMutation is one query_parameter_mutations entry: the removal of
// every parameter named key or, with value set, an append with its
// action.
type queryMutation struct {
	key    string
	value  *accesslog.Formatter // nil: remove
	action corev3.KeyValueAppend_KeyValueAppendAction
}

// compileQueryMutations compiles query_parameter_mutations; errors name
// the entry and its field, with Envoy's wording. It reports whether a
// value uses % operators.
func compileQueryMutations(list []*corev3.KeyValueMutation, fm accesslog.Formatters) ([]queryMutation, bool, error) {
	out := make([]queryMutation, 0, len(list))
	formats := false
	for i, m := range list {
		path := fmt.Sprintf("query_parameter_mutations[%d]", i)
		a := m.GetAppend()
		switch {
		case a != nil && m.GetRemove() != "":
			return nil, false, fmt.Errorf("%s: only one of 'append'/'remove' can be specified", path)
		case a != nil:
			rec := a.GetRecord()
			switch {
			case rec == nil:
				return nil, false, fmt.Errorf("%s.append: no record specified for append mutation", path)
			case rec.GetKey() == "":
				return nil, false, fmt.Errorf("%s.append.record.key: must not be empty", path)
			}
			sv, ok := rec.GetValue().GetKind().(*structpb.Value_StringValue)
			if !ok {
				return nil, false, fmt.Errorf("%s.append.record.value: only string value is allowed for record value", path)
			}
			f, err := accesslog.TextWith(sv.StringValue, true, fm)
			if err != nil {
				return nil, false, fmt.Errorf("%s.append.record.value: %w", path, err)
			}
			if _, literal := f.Literal(); !literal {
				formats = true
			}
			out = append(out, queryMutation{key: rec.GetKey(), value: f, action: a.GetAction()})
		case m.GetRemove() != "":
			out = append(out, queryMutation{key: m.GetRemove()})
		default:
			return nil, false, fmt.Errorf("%s: one of 'append'/'remove' must be specified", path)
		}
	}
	return out, formats, nil
}

// queryParam is one parameter of a query string: its decoded name, and
// its text as it goes out (as received, or encoded when a mutation made
// it).
type queryParam struct {
	name, text string
}

// mutateQuery applies list to the query string of path and returns the
// new path. As Envoy's QueryParamsMulti does, the parameters are grouped
// by their decoded name and written out sorted by it, each name's values
// in order, and a path left with no parameter loses its "?". A
// parameter no mutation touched keeps its bytes as received; a value a
// mutation adds is percent-encoded (Envoy's
// header_mutation_url_encode_query_params).
func mutateQuery(path string, list []queryMutation, e *accesslog.Entry) string {
	base, query, _ := strings.Cut(path, "?")
	var params []queryParam
	for part := range strings.SplitSeq(query, "&") {
		if part == "" {
			continue
		}
		name, _, _ := strings.Cut(part, "=")
		params = append(params, queryParam{name: percentDecode(name), text: part})
	}
	var buf []byte
	for _, m := range list {
		has := slices.ContainsFunc(params, func(p queryParam) bool { return p.name == m.key })
		if m.value == nil {
			params = slices.DeleteFunc(params, func(p queryParam) bool { return p.name == m.key })
			continue
		}
		render := func() queryParam {
			if e == nil {
				e = &accesslog.Entry{}
			}
			buf = m.value.AppendValue(buf[:0], e)
			return queryParam{name: m.key, text: m.key + "=" + queryEscape(string(buf))}
		}
		switch m.action {
		case corev3.KeyValueAppend_APPEND_IF_EXISTS_OR_ADD:
			params = append(params, render())
		case corev3.KeyValueAppend_ADD_IF_ABSENT:
			if !has {
				params = append(params, render())
			}
		case corev3.KeyValueAppend_OVERWRITE_IF_EXISTS:
			if has {
				params = overwrite(params, render())
			}
		case corev3.KeyValueAppend_OVERWRITE_IF_EXISTS_OR_ADD:
			params = overwrite(params, render())
		}
	}
	if len(params) == 0 {
		return base
	}
	slices.SortStableFunc(params, func(a, b queryParam) int { return strings.Compare(a.name, b.name) })
	var b strings.Builder
	b.WriteString(base)
	for i, p := range params {
		if i == 0 {
			b.WriteByte('?')
		} else {
			b.WriteByte('&')
		}
		b.WriteString(p.text)
	}
	return b.String()
}

// overwrite replaces every parameter named p.name with p alone.
func overwrite(params []queryParam, p queryParam) []queryParam {
	params = slices.DeleteFunc(params, func(q queryParam) bool { return q.name == p.name })
	return append(params, p)
}

// percentDecode decodes %XX sequences, leaving a malformed one as it is,
// as Envoy's PercentEncoding::decode does ('+' stays '+').
func percentDecode(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

// queryEscape percent-encodes every byte of s outside the unreserved set
// of RFC 3986.
func queryEscape(s string) string {
	const hex = "0123456789ABCDEF"
	var b []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isUnreserved(c) {
			if b != nil {
				b = append(b, c)
			}
			continue
		}
		if b == nil {
			b = append(make([]byte, 0, len(s)+8), s[:i]...)
		}
		b = append(b, '%', hex[c>>4], hex[c&0xf])
	}
	if b == nil {
		return s
	}
	return string(b)
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}
