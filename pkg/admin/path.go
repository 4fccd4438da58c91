package admin

import "strings"

// normalizePath resolves "." and ".." segments and merges repeated slashes,
// as Envoy's admin connection manager does before matching, so "//stats" and
// "/a/../help" reach "/stats" and "/help". Unlike path.Clean it keeps a
// trailing slash: Envoy matches exactly, and "/stats/" is not "/stats".
// The result always starts with "/"; ".." never climbs above the root.
func normalizePath(p string) string {
	segments := strings.Split(p, "/")
	out := make([]string, 0, len(segments))
	trailingSlash := false
	for i, s := range segments {
		last := i == len(segments)-1
		switch s {
		case "", ".":
			// An empty segment comes from a leading, doubled or trailing
			// slash; a final "." or empty segment denotes a directory.
			trailingSlash = last && i > 0
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			trailingSlash = last
		default:
			out = append(out, s)
			trailingSlash = false
		}
	}
	if len(out) == 0 {
		return "/"
	}
	n := "/" + strings.Join(out, "/")
	if trailingSlash {
		n += "/"
	}
	return n
}
