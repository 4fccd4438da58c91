package logging

// Escaping of messages and records. Three different escapers exist because
// Envoy has three: %_ (newlines only), %j (a JSON string body) and
// --log-format-escaped (absl::CEscape of the whole record).

const hexDigits = "0123456789abcdef"

// appendNewlinesEscaped is %_: every newline becomes the two characters \n.
func appendNewlinesEscaped(dst, msg []byte) []byte {
	for _, c := range msg {
		if c == '\n' {
			dst = append(dst, '\\', 'n')
			continue
		}
		dst = append(dst, c)
	}
	return dst
}

// appendJSONEscaped is %j: msg escaped as the body of a JSON string
// (RFC 7159), without the surrounding quotes, as Envoy's JsonEscaper does:
// quotes, backslashes and control characters are escaped, every other byte
// is copied.
func appendJSONEscaped(dst, msg []byte) []byte {
	for _, c := range msg {
		switch c {
		case '"':
			dst = append(dst, '\\', '"')
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			if c < 0x20 {
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
				continue
			}
			dst = append(dst, c)
		}
	}
	return dst
}

// appendEscapedRecord is --log-format-escaped: the formatted record is
// escaped with C escape sequences (absl::CEscape: \n \r \t \" \' \\ and
// three-digit octal for every other byte outside printable ASCII), except
// its trailing whitespace, which ends the line and stays as it is.
func appendEscapedRecord(dst, line []byte) []byte {
	end := len(line)
	for end > 0 && isASCIISpace(line[end-1]) {
		end--
	}
	for _, c := range line[:end] {
		switch c {
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '"', '\'', '\\':
			dst = append(dst, '\\', c)
		default:
			if c < 0x20 || c >= 0x7f {
				dst = append(dst, '\\', '0'+c>>6, '0'+(c>>3)&7, '0'+c&7)
				continue
			}
			dst = append(dst, c)
		}
	}
	return append(dst, line[end:]...)
}

// isASCIISpace is absl::ascii_isspace.
func isASCIISpace(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\v', '\f', '\r':
		return true
	}
	return false
}
