package httpconn

// h2BlockMemo remembers what a connection's repeated request header block
// decodes to. A client sends much the same request again and again, and
// its HPACK encoder then sends the same bytes: h2load's request, once its
// :authority and user-agent are in the dynamic table, is five one-byte
// indexed fields. Decoding them, copying each name and value into the
// stream and checking each field (RFC 9113 §8.2) costs some 2,000
// instructions per request; a block that decodes without changing the
// dynamic table, seen again at the same table generation, decodes to the
// same fields, which the same checks accept the same way. The memo keeps
// those fields (in strings of its own, never written again) and the
// stream's state they made, and a stream whose block is the remembered
// one gets them without decoding.
//
// A block is remembered on its second decoding in a row at the same
// generation, so that a client whose blocks differ each time pays a copy
// of its block per request (up to maxMemoBlock bytes), and no
// allocation. Only a complete block in one HEADERS frame that made a
// valid request (no field refused, none over the limits) is remembered;
// the limits and options the checks use are the manager's, fixed for the
// connection, and the decoder's own limits change its generation.
type h2BlockMemo struct {
	// seen is the last request block that left the dynamic table as it
	// found it, at generation seenGen.
	seen    []byte
	seenGen uint64
	// ok: the fields below are what seen decodes to at seenGen.
	ok bool

	method, path, authority, scheme, host, protocol string
	fields                                          []field
	cookies                                         int
	declared                                        int64
	headerBytes                                     int
	sawRegular, teTrailers, expect100               bool
}

// maxMemoBlock bounds the blocks remembered: a usual request's is a few
// dozen bytes once the encoder indexes its fields.
const maxMemoBlock = 512

// replay fills st's request fields with what block decodes to, if block
// is the one remembered at the table's generation gen.
func (m *h2BlockMemo) replay(st *h2Stream, block []byte, gen uint64) bool {
	if !m.ok || gen != m.seenGen || string(block) != string(m.seen) {
		return false
	}
	st.method, st.path, st.authority, st.scheme = m.method, m.path, m.authority, m.scheme
	st.host, st.protocol = m.host, m.protocol
	st.fields = append(st.fields[:0], m.fields...)
	st.cookies, st.declared, st.headerBytes = m.cookies, m.declared, m.headerBytes
	st.sawRegular, st.teTrailers, st.expect100 = m.sawRegular, m.teTrailers, m.expect100
	return true
}

// note is told of a request block that decoded, at generation gen and
// without changing the table, to st's valid fields (replay did not have
// it): the second time in a row, they are remembered.
func (m *h2BlockMemo) note(st *h2Stream, block []byte, gen uint64) {
	if len(block) > maxMemoBlock {
		return
	}
	if gen == m.seenGen && string(block) == string(m.seen) {
		m.record(st)
		return
	}
	m.seen = append(m.seen[:0], block...)
	m.seenGen, m.ok = gen, false
}

// record copies st's request fields into one buffer of the memo's own:
// the streams that replay them keep views of it, which stay valid after
// the memo records another block (the buffer is never written again).
func (m *h2BlockMemo) record(st *h2Stream) {
	n := len(st.method) + len(st.path) + len(st.authority) + len(st.scheme) + len(st.host) + len(st.protocol)
	for _, f := range st.fields {
		n += len(f.name) + len(f.value)
	}
	buf := make([]byte, 0, n)
	keep := func(s string) string {
		if s == "" {
			return ""
		}
		i := len(buf)
		buf = append(buf, s...)
		return view(buf[i:len(buf):len(buf)])
	}
	m.method, m.path, m.authority, m.scheme = keep(st.method), keep(st.path), keep(st.authority), keep(st.scheme)
	m.host, m.protocol = keep(st.host), keep(st.protocol)
	m.fields = m.fields[:0]
	for _, f := range st.fields {
		m.fields = append(m.fields, field{keep(f.name), keep(f.value)})
	}
	m.cookies, m.declared, m.headerBytes = st.cookies, st.declared, st.headerBytes
	m.sawRegular, m.teTrailers, m.expect100 = st.sawRegular, st.teTrailers, st.expect100
	m.ok = true
}
