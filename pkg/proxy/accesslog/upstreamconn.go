package accesslog

// UpstreamConnectionReader is implemented by sinks that can tell whether
// they read an entry's UpstreamLocalAddress and UpstreamTLS. Those need
// work on every request of an HTTP/2 upstream (Go's transport reports the
// connection it picked only through a per-request trace), which the
// connection manager skips when no reader wants them. A sink that does
// not implement this is taken to read them.
type UpstreamConnectionReader interface {
	ReadsUpstreamConnection() bool
}

// ReadsUpstreamConnection reports whether rendering may read an entry's
// UpstreamLocalAddress or UpstreamTLS: %UPSTREAM_LOCAL_ADDRESS%, an
// %UPSTREAM_<TLS field>% operator, or a formatter extension's operator,
// whose reads are not known. A nil formatter reads nothing.
func (f *Formatter) ReadsUpstreamConnection() bool {
	switch {
	case f == nil:
		return false
	case f.text != nil:
		return partsReadUpstreamConnection(f.text.parts)
	case f.json != nil:
		return f.json.root.readsUpstreamConnection()
	}
	return false
}

// ReadsUpstreamConnection implements UpstreamConnectionReader.
func (s LineSink) ReadsUpstreamConnection() bool { return s.Format.ReadsUpstreamConnection() }

func partsReadUpstreamConnection(parts []part) bool {
	for i := range parts {
		switch p := &parts[i]; p.op {
		case opUpstreamLocalAddress, opExtension:
			return true
		case opTLS:
			if p.upstreamTLS {
				return true
			}
		}
	}
	return false
}

func (v *jsonValue) readsUpstreamConnection() bool {
	if partsReadUpstreamConnection(v.parts) {
		return true
	}
	for i := range v.fields {
		if v.fields[i].value.readsUpstreamConnection() {
			return true
		}
	}
	for i := range v.items {
		if v.items[i].readsUpstreamConnection() {
			return true
		}
	}
	return false
}
