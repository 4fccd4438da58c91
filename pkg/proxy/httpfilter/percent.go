package httpfilter

import "strings"

// PercentEncode percent-encodes the characters of reserved, the control
// characters, '~' and above in s, as Envoy's PercentEncoding::encode
// does: what the filters that post a form to a token endpoint (oauth2,
// the credential injector's oauth2) encode their values with.
func PercentEncode(s, reserved string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch < ' ' || ch >= '~' || strings.IndexByte(reserved, ch) >= 0 {
			b.WriteByte('%')
			b.WriteByte(hexDigits[ch>>4])
			b.WriteByte(hexDigits[ch&15])
			continue
		}
		b.WriteByte(ch)
	}
	return b.String()
}
