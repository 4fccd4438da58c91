package http1

// Version is an HTTP/1 protocol version.
type Version uint8

// The versions this codec speaks. A 1.x minor version above 1 is read as
// HTTP/1.1, as RFC 9110 §2.5 lets a recipient do.
const (
	HTTP10 Version = 10
	HTTP11 Version = 11
)

// String returns the version as a start line writes it.
func (v Version) String() string {
	if v == HTTP10 {
		return "HTTP/1.0"
	}
	return "HTTP/1.1"
}

// parseVersion reads "HTTP/<digit>.<digit>".
func parseVersion(b []byte) (Version, error) {
	if len(b) != 8 || string(b[:5]) != "HTTP/" || b[6] != '.' || !isDigit(b[5]) || !isDigit(b[7]) {
		return 0, ErrVersion
	}
	if b[5] != '1' {
		return 0, ErrVersionNotSupported
	}
	if b[7] == '0' {
		return HTTP10, nil
	}
	return HTTP11, nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
