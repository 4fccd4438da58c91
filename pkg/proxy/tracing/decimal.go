package tracing

import "strconv"

// AppendUint appends v in decimal, as strconv.AppendUint(b, v, 10) does.
// Values below 10,000 (a span's status code, and the sizes of most
// requests and responses) are written digit by digit, with divisions by
// constants the compiler turns into multiplications: strconv's general
// path cost a sampled request's span about 250 instructions for its three
// numbers.
func AppendUint(b []byte, v uint64) []byte {
	switch {
	case v < 10:
		return append(b, byte('0'+v))
	case v < 100:
		return append(b, byte('0'+v/10), byte('0'+v%10))
	case v < 1000:
		return append(b, byte('0'+v/100), byte('0'+v/10%10), byte('0'+v%10))
	case v < 10000:
		return append(b, byte('0'+v/1000), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10))
	}
	return strconv.AppendUint(b, v, 10)
}
