package http1

import "strconv"

// AppendDecimal appends n in decimal, as strconv.AppendInt(dst, n, 10)
// does. The numbers of a head are small (a status code, a body's length,
// a count of attempts, milliseconds such as a 15 s route timeout's): up
// to five digits are written straight, with divisions by constants, where
// strconv's general path costs about a hundred instructions per number.
func AppendDecimal(dst []byte, n int64) []byte {
	if n < 0 || n >= 100000 {
		return strconv.AppendInt(dst, n, 10)
	}
	v := uint(n)
	switch {
	case v < 10:
		return append(dst, byte('0'+v))
	case v < 100:
		return append(dst, byte('0'+v/10), byte('0'+v%10))
	case v < 1000:
		return append(dst, byte('0'+v/100), byte('0'+v/10%10), byte('0'+v%10))
	case v < 10000:
		return append(dst, byte('0'+v/1000), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10))
	}
	return append(dst, byte('0'+v/10000), byte('0'+v/1000%10), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10))
}
