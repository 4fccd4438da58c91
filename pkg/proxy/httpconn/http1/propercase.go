package http1

import "bytes"

// ProperCaseNames rewrites, in place, the field names of a serialised
// message head (its start line, fields and the blank line) the way
// Envoy's proper_case_words header key format does: the first character
// of a name, and every letter that follows a character that is neither a
// letter nor a digit, upper case ("content-type" becomes "Content-Type",
// "x-b3-traceid" "X-B3-Traceid"); the rest is left as it is. Field values
// and the start line are untouched. Working on the written bytes covers
// every field the writer emits, its own framing fields included.
func ProperCaseNames(head []byte) {
	eachFieldName(head, func(name []byte, _ bool) { properCaseName(name) })
}

// eachFieldName calls fn with the name of each field line of a serialised
// message head (start line, fields, blank line), in place: the bytes
// before the line's colon (colon true), or the whole line without its
// line end when it has none.
func eachFieldName(head []byte, fn func(name []byte, colon bool)) {
	i := bytes.IndexByte(head, '\n')
	if i < 0 {
		return
	}
	for line := head[i+1:]; len(line) > 0; {
		end := bytes.IndexByte(line, '\n')
		if end <= 1 {
			return // the blank line ends the fields
		}
		if c := bytes.IndexByte(line[:end], ':'); c >= 0 {
			fn(line[:c], true)
		} else {
			fn(line[:end], false)
		}
		line = line[end+1:]
	}
}

// properCaseName writes one field name in proper case, in place.
func properCaseName(name []byte) {
	upper := true
	for j, c := range name {
		isLower := 'a' <= c && c <= 'z'
		if upper && isLower {
			name[j] = c - 'a' + 'A'
		}
		upper = !isLower && !('A' <= c && c <= 'Z') && !('0' <= c && c <= '9')
	}
}
