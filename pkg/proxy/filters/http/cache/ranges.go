package cache

import (
	"math"
	"strconv"
	"strings"
)

// Range requests answered from the cache, as Envoy's RangeUtils: one
// byte range at most (a header with several, or that does not parse, is
// ignored and the whole response served), a range covering the whole body
// serves the whole response, a range beyond it is answered 416.

// byteRange is the part of a stored body a hit serves.
type byteRange struct {
	// whole is set when the whole response is served (no usable range).
	whole bool
	// unsatisfiable is a range that misses the body: 416.
	unsatisfiable bool
	// begin and end delimit the part served, end excluded.
	begin, end int
}

// suffix marks a missing position of a range spec.
const suffix = math.MaxUint64

// rangeOf is what a request's Range header asks of a body of length n.
func rangeOf(header string, n int) byteRange {
	first, last, ok := parseRange(header)
	if !ok {
		return byteRange{whole: true}
	}
	size := uint64(n)
	if size == 0 {
		return byteRange{unsatisfiable: true}
	}
	if first == suffix {
		// bytes=-N: the last N bytes.
		switch {
		case last == 0:
			return byteRange{unsatisfiable: true}
		case last >= size:
			return byteRange{whole: true}
		}
		return byteRange{begin: int(size - last), end: n}
	}
	if first >= size {
		return byteRange{unsatisfiable: true}
	}
	if last >= size-1 {
		if first == 0 {
			return byteRange{whole: true}
		}
		return byteRange{begin: int(first), end: n}
	}
	return byteRange{begin: int(first), end: int(last) + 1}
}

// parseRange reads "bytes=first-last" with one range spec, first or last
// possibly missing (suffix), not both.
func parseRange(h string) (first, last uint64, ok bool) {
	spec, found := strings.CutPrefix(h, "bytes=")
	if !found || strings.Contains(spec, ",") {
		return 0, 0, false
	}
	a, b, found := strings.Cut(spec, "-")
	if !found || (a == "" && b == "") {
		return 0, 0, false
	}
	first, last = suffix, suffix
	var err error
	if a != "" {
		if first, err = digits(a); err != nil {
			return 0, 0, false
		}
	}
	if b != "" {
		if last, err = digits(b); err != nil {
			return 0, 0, false
		}
	}
	if first != suffix && first > last {
		return 0, 0, false
	}
	return first, last, true
}

// digits reads a run of ASCII digits (no sign, no space).
func digits(s string) (uint64, error) {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, strconv.ErrSyntax
		}
	}
	return strconv.ParseUint(s, 10, 64)
}
