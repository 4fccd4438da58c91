package logging

// withPadding wraps a with spdlog's padding; widths count bytes, as in
// spdlog.
func withPadding(a appender, pad padding) appender {
	if !pad.enabled {
		return a
	}
	return func(dst []byte, st *formatState) []byte {
		start := len(dst)
		dst = a(dst, st)
		n := len(dst) - start
		if n >= pad.width {
			if pad.truncate {
				dst = dst[:start+pad.width]
			}
			return dst
		}
		fill := pad.width - n
		switch pad.side {
		case padRight:
			return appendSpaces(dst, fill)
		case padCenter:
			left := fill / 2
			dst = shiftRight(dst, start, left)
			return appendSpaces(dst, fill-left)
		default:
			return shiftRight(dst, start, fill)
		}
	}
}

// shiftRight moves dst[start:] right by n bytes and fills the gap with
// spaces, so that padding on the left needs no second buffer.
func shiftRight(dst []byte, start, n int) []byte {
	end := len(dst)
	dst = appendSpaces(dst, n)
	copy(dst[start+n:], dst[start:end])
	for i := start; i < start+n; i++ {
		dst[i] = ' '
	}
	return dst
}

func appendSpaces(dst []byte, n int) []byte {
	for range n {
		dst = append(dst, ' ')
	}
	return dst
}
