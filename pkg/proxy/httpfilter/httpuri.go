package httpfilter

import "strings"

// HostPath splits the uri of an HttpUri (a token endpoint's) into the
// host and the path (query included) of the request a filter sends to
// its cluster: the scheme is dropped, and a URI without a path asks for
// "/".
func HostPath(uri string) (host, path string) {
	if _, rest, ok := strings.Cut(uri, "://"); ok {
		uri = rest
	}
	i := strings.IndexByte(uri, '/')
	if i < 0 {
		return uri, "/"
	}
	return uri[:i], uri[i:]
}
