package stats

import "bytes"

// fastMatcher matches one default extractor's regex without the regex
// engine, returning the same spans as its first two groups. The engine
// allocates each match's result, and these extractors try nearly every
// name at every Prometheus scrape. FuzzFastExtractors checks each against
// its regex.
type fastMatcher func(name []byte) (rs, re, vs, ve int, ok bool)

// fastMatchers are keyed by the default extractor's pattern, so that a
// configured extractor with the same tag name but its own regex keeps
// using the regex.
var fastMatchers = map[string]fastMatcher{
	`_rq(_(\d{3}))$`: matchResponseCode,
	`_rq_((\d))xx$`:  matchResponseCodeClass,
	`^listener\.((\d+\.\d+\.\d+\.\d+_\d+|\[[^\]]*\]_\d+|` + tv + `)\.)`: matchListenerAddress,
	`^listener\..*?\.http\.((` + tv + `)\.)`:                            matchListenerHTTPPrefix,
	`^(?:listener\..*?|server|listener_manager)\.((worker_\d+)\.)`:      matchWorkerID,
}

// matchResponseCode matches `_rq(_(\d{3}))$`: a name ending in "_rq_"
// and three digits.
func matchResponseCode(name []byte) (rs, re, vs, ve int, ok bool) {
	n := len(name)
	if n < 7 || string(name[n-7:n-3]) != "_rq_" || !isDigits(name[n-3:]) {
		return 0, 0, 0, 0, false
	}
	return n - 4, n, n - 3, n, true
}

// matchResponseCodeClass matches `_rq_((\d))xx$`: a name ending in
// "_rq_", a digit and "xx".
func matchResponseCodeClass(name []byte) (rs, re, vs, ve int, ok bool) {
	n := len(name)
	if n < 7 || string(name[n-7:n-3]) != "_rq_" || !isDigits(name[n-3:n-2]) || string(name[n-2:]) != "xx" {
		return 0, 0, 0, 0, false
	}
	return n - 3, n - 2, n - 3, n - 2, true
}

// matchListenerAddress matches
// `^listener\.((\d+\.\d+\.\d+\.\d+_\d+|\[[^\]]*\]_\d+|[^\.]+)\.)`: after
// "listener.", an IPv4 address and port, else a bracketed IPv6 address
// and port, else any token, whichever comes first in that order, followed
// by a dot.
func matchListenerAddress(name []byte) (rs, re, vs, ve int, ok bool) {
	const prefix = "listener."
	if !hasPrefix(name, prefix) {
		return 0, 0, 0, 0, false
	}
	rest := name[len(prefix):]
	end := ipv4Port(rest)
	if end < 0 {
		end = ipv6Port(rest)
	}
	if end < 0 {
		end = bytes.IndexByte(rest, '.')
		if end <= 0 {
			return 0, 0, 0, 0, false
		}
	}
	vs, ve = len(prefix), len(prefix)+end
	return vs, ve + 1, vs, ve, true
}

// matchListenerHTTPPrefix matches `^listener\..*?\.http\.(([^\.]+)\.)`:
// the token after the first ".http." that follows "listener." and is
// itself followed by a dot. The lazy `.*?` cannot cross a newline.
func matchListenerHTTPPrefix(name []byte) (rs, re, vs, ve int, ok bool) {
	const prefix, infix = "listener.", ".http."
	if !hasPrefix(name, prefix) {
		return 0, 0, 0, 0, false
	}
	for p := len(prefix); p < len(name); p++ {
		if hasPrefix(name[p:], infix) {
			vs = p + len(infix)
			if dot := bytes.IndexByte(name[vs:], '.'); dot > 0 {
				ve = vs + dot
				return vs, ve + 1, vs, ve, true
			}
		}
		if name[p] == '\n' {
			break
		}
	}
	return 0, 0, 0, 0, false
}

// matchWorkerID matches
// `^(?:listener\..*?|server|listener_manager)\.((worker_\d+)\.)`: a
// ".worker_<digits>." segment, anywhere after "listener." (the first one),
// or right after "server" or "listener_manager".
func matchWorkerID(name []byte) (rs, re, vs, ve int, ok bool) {
	if hasPrefix(name, "listener.") {
		for p := len("listener."); p < len(name); p++ {
			if end := workerAt(name, p); end > 0 {
				return p + 1, end + 1, p + 1, end, true
			}
			if name[p] == '\n' {
				break
			}
		}
		return 0, 0, 0, 0, false
	}
	for _, head := range [...]string{"server", "listener_manager"} {
		if hasPrefix(name, head) {
			if end := workerAt(name, len(head)); end > 0 {
				return len(head) + 1, end + 1, len(head) + 1, end, true
			}
		}
	}
	return 0, 0, 0, 0, false
}

// workerAt returns the end of "worker_<digits>" when name holds
// ".worker_<digits>." at p, else -1.
func workerAt(name []byte, p int) int {
	const w = ".worker_"
	if !hasPrefix(name[p:], w) {
		return -1
	}
	return digitsThen(name, p+len(w), '.')
}

// ipv4Port returns the length of the `\d+\.\d+\.\d+\.\d+_\d+` at the
// start of b when a dot follows it, else -1.
func ipv4Port(b []byte) int {
	i := 0
	for part, sep := range [...]byte{'.', '.', '.', '_', '.'} {
		if i = digitsThen(b, i, sep); i < 0 {
			return -1
		}
		if part < 4 {
			i++ // the separator is part of the value, the final dot is not
		}
	}
	return i
}

// ipv6Port returns the length of the `\[[^\]]*\]_\d+` at the start of b
// when a dot follows it, else -1.
func ipv6Port(b []byte) int {
	if len(b) == 0 || b[0] != '[' {
		return -1
	}
	end := bytes.IndexByte(b, ']')
	if end < 0 || end+1 == len(b) || b[end+1] != '_' {
		return -1
	}
	return digitsThen(b, end+2, '.')
}

// digitsThen returns the index of sep when b holds, from i, one or more
// digits followed by sep, else -1. A digit run ends at a non-digit, so no
// shorter run could be followed by sep: no backtracking is needed.
func digitsThen(b []byte, i int, sep byte) int {
	start := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	if i == start || i == len(b) || b[i] != sep {
		return -1
	}
	return i
}

func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
