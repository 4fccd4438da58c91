package cdnloop

import "fmt"

// The grammar of the CDN-Loop header (RFC 8586, with RFC 7230's list and
// parameter rules), as Envoy's parser reads it:
//
//	CDN-Loop  = #cdn-info
//	cdn-info  = cdn-id *( OWS ";" OWS parameter )
//	cdn-id    = ( uri-host [ ":" port ] ) / pseudonym
//	parameter = token "=" ( token / quoted-string )
//
// Like Envoy's, the parser accepts a token for uri-host and pseudonym, and
// for an IPv6 literal anything of hex digits, ':' and '.' in brackets.

// countOccurrences counts the cdn-infos of the list v whose cdn-id is id.
func countOccurrences(v, id string) (int, error) {
	n := 0
	i := skipOWS(v, 0)
	for i < len(v) {
		if v[i] == ',' {
			// An empty element.
			i = skipOWS(v, i+1)
			continue
		}
		start := i
		end, err := parseCdnInfo(v, i)
		if err != nil {
			return 0, err
		}
		if cdnID := v[start:end.idEnd]; cdnID == id {
			n++
		}
		i = skipOWS(v, end.next)
		if i == len(v) {
			break
		}
		if v[i] != ',' {
			return 0, fmt.Errorf("expected ',' at position %d; found '%c'", i, v[i])
		}
		i = skipOWS(v, i+1)
	}
	return n, nil
}

// infoEnd is where a cdn-info's id ends and where the next input starts.
type infoEnd struct{ idEnd, next int }

// parseCdnInfo parses the cdn-info at i.
func parseCdnInfo(v string, i int) (infoEnd, error) {
	_, idEnd, err := parseCdnID(v, i)
	if err != nil {
		return infoEnd{}, err
	}
	i = skipOWS(v, idEnd)
	for i < len(v) && v[i] == ';' {
		i = skipOWS(v, i+1)
		if i, err = parseParameter(v, i); err != nil {
			return infoEnd{}, err
		}
		i = skipOWS(v, i)
	}
	return infoEnd{idEnd: idEnd, next: i}, nil
}

// parseCdnID parses the cdn-id at i, returning its bounds.
func parseCdnID(v string, i int) (start, end int, err error) {
	start = i
	if i == len(v) {
		return 0, 0, fmt.Errorf("expected cdn-id at position %d; found end-of-input", i)
	}
	if v[i] == '[' {
		i, err = parseIPv6(v, i)
	} else {
		i, err = parseToken(v, i)
	}
	if err != nil {
		return 0, 0, err
	}
	if i < len(v) && v[i] == ':' {
		i++
		for i < len(v) && isDigit(v[i]) {
			i++
		}
	}
	return start, i, nil
}

// parseIPv6 parses a bracketed IPv6 literal at i, loosely.
func parseIPv6(v string, i int) (int, error) {
	i++ // '['
	for i < len(v) && (isHexDigit(v[i]) || v[i] == ':' || v[i] == '.') {
		i++
	}
	if i == len(v) {
		return 0, fmt.Errorf("expected closing ']' of IPv6 literal at position %d; found end-of-input", i)
	}
	if v[i] != ']' {
		return 0, fmt.Errorf("expected closing ']' of IPv6 literal at position %d; found '%c'", i, v[i])
	}
	return i + 1, nil
}

// parseParameter parses "token=value" at i, the value a token or a
// quoted string.
func parseParameter(v string, i int) (int, error) {
	i, err := parseToken(v, i)
	if err != nil {
		return 0, err
	}
	if i == len(v) {
		return 0, fmt.Errorf("expected '=' at position %d; found end-of-input", i)
	}
	if v[i] != '=' {
		return 0, fmt.Errorf("expected '=' at position %d; found '%c'", i, v[i])
	}
	i++
	if i == len(v) {
		return 0, fmt.Errorf("expected token or quoted-string at position %d; found end-of-input", i)
	}
	if v[i] == '"' {
		return parseQuoted(v, i)
	}
	return parseToken(v, i)
}

// parseQuoted parses the quoted string at i (which is '"').
func parseQuoted(v string, i int) (int, error) {
	i++
	for i < len(v) && v[i] != '"' {
		switch c := v[i]; {
		case isQdText(c):
			i++
		case c == '\\':
			if i+1 == len(v) {
				return 0, fmt.Errorf("expected escaped character at position %d; found end-of-input", i+1)
			}
			if e := v[i+1]; !(e == '\t' || e == ' ' || isVChar(e) || e >= 0x80) {
				return 0, fmt.Errorf("expected escapable character at position %d; found '\\x%x'", i+1, e)
			}
			i += 2
		default:
			return 0, fmt.Errorf("expected closing quote at position %d; found '%c'", i, c)
		}
	}
	if i == len(v) {
		return 0, fmt.Errorf("expected closing quote at position %d; found end-of-input", i)
	}
	return i + 1, nil
}

// parseToken parses the token (at least one tchar) at i.
func parseToken(v string, i int) (int, error) {
	start := i
	for i < len(v) && isTChar(v[i]) {
		i++
	}
	if i == start {
		if i == len(v) {
			return 0, fmt.Errorf("expected token starting at position %d; found end of input", i)
		}
		return 0, fmt.Errorf("expected token starting at position %d; found '%c'", i, v[i])
	}
	return i, nil
}

// skipOWS skips spaces and tabs from i.
func skipOWS(v string, i int) int {
	for i < len(v) && (v[i] == ' ' || v[i] == '\t') {
		i++
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHexDigit(c byte) bool {
	return isDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

func isVChar(c byte) bool { return 0x21 <= c && c <= 0x7e }

// isQdText is RFC 7230's qdtext, obs-text included.
func isQdText(c byte) bool {
	return c == '\t' || c == ' ' || c == 0x21 || (0x23 <= c && c <= 0x5b) || (0x5d <= c && c <= 0x7e) || c >= 0x80
}

// isTChar is RFC 7230's tchar.
func isTChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', isDigit(c):
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}
