package router

// FirstField returns the first field of the named header (lower case),
// as Envoy's filters read an untrusted header's header[0]; a header map
// that does not keep fields apart gives the joined value.
func FirstField(h HeaderGetter, name string) (string, bool) {
	if h == nil {
		return "", false
	}
	if f, ok := h.(HeaderFields); ok {
		return f.Field(name, 0)
	}
	return h.Get(name)
}
