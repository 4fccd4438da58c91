package dnsfilter

import (
	"encoding/binary"
	"net/netip"
	"strconv"
	"strings"
)

// DNS constants of the wire format (RFC 1035) and of Envoy's filter.
const (
	typeA    = 1
	typeAAAA = 28
	typeSRV  = 33
	classIN  = 1

	rcodeNoError  = 0
	rcodeFormErr  = 1
	rcodeNXDomain = 3
	rcodeNotImp   = 4

	headerLen = 12
	// minNameLen is the least a question's name takes (Envoy's
	// MIN_QUERY_NAME_LENGTH).
	minNameLen  = 3
	maxLabelLen = 63
	maxNameLen  = 255
	// maxAnswers is the most answers a response carries (Envoy's
	// MAX_RETURNED_RECORDS), maxResponse the size it keeps answers within
	// (MAX_DNS_RESPONSE_SIZE).
	maxAnswers  = 8
	maxResponse = 512
	// maxPointers bounds the compression pointers a name may follow.
	maxPointers = 64
)

// question is one question of a query.
type question struct {
	name          string
	qtype, qclass uint16
}

// record is an answer or additional record: an address (A or AAAA), or a
// service target (SRV).
type record struct {
	name  string
	rtype uint16
	ttl   uint32
	ip    netip.Addr
	srv   target
}

// parseCounters are the stats parsing moves.
type parseCounters interface {
	underflow()
	parsingFailure()
	additionalRRs()
	answerOrAuthorityRRs()
}

// queryContext is a query and the response being built for it, as Envoy's
// DnsQueryContext.
type queryContext struct {
	id    uint16
	flags uint16
	// parsed is false when the datagram is not a query Envoy answers: the
	// response then says FORMERR.
	parsed     bool
	questions  []question
	answers    []record
	additional []record
	// retries is what is left of external_retry_count.
	retries uint32
}

// parseQuery reads a datagram as Envoy's DnsMessageParser does: a header,
// no answer or authority records, exactly one question of class IN with a
// non-zero ID; additional records (EDNS) are counted and ignored.
func parseQuery(b []byte, c parseCounters) *queryContext {
	q := &queryContext{}
	if len(b) >= 2 {
		q.id = binary.BigEndian.Uint16(b)
	}
	if len(b) >= 4 {
		q.flags = binary.BigEndian.Uint16(b[2:])
	}
	if len(b) < headerLen {
		c.underflow()
		return q
	}
	qd := binary.BigEndian.Uint16(b[4:])
	an := binary.BigEndian.Uint16(b[6:])
	ns := binary.BigEndian.Uint16(b[8:])
	ar := binary.BigEndian.Uint16(b[10:])
	if q.flags&0x8000 != 0 || an != 0 || ns != 0 {
		// A response, or an inverse query: Envoy answers FORMERR.
		c.answerOrAuthorityRRs()
		return q
	}
	if qd != 1 || q.id == 0 {
		return q
	}
	qu, ok := parseQuestion(b, headerLen)
	if !ok {
		c.parsingFailure()
		return q
	}
	q.questions = append(q.questions, qu)
	if ar != 0 {
		c.additionalRRs()
	}
	q.parsed = true
	return q
}

// parseQuestion reads the question at off.
func parseQuestion(b []byte, off int) (question, bool) {
	if len(b)-off < minNameLen {
		return question{}, false
	}
	name, next, ok := readName(b, off)
	if !ok || name == "" || len(b)-next < 4 {
		return question{}, false
	}
	qu := question{
		name:   name,
		qtype:  binary.BigEndian.Uint16(b[next:]),
		qclass: binary.BigEndian.Uint16(b[next+2:]),
	}
	if qu.qclass != classIN {
		return question{}, false
	}
	return qu, true
}

// readName decodes the name at off as c-ares' ares_expand_name does
// (Envoy's decoder): labels joined by dots, "." and "\" escaped with a
// backslash and unprintable bytes as \DDD; compression pointers are
// followed. It returns the offset after the name where it is stored.
func readName(b []byte, off int) (string, int, bool) {
	var sb strings.Builder
	next := -1
	for hops := 0; ; {
		if off >= len(b) {
			return "", 0, false
		}
		l := int(b[off])
		switch {
		case l == 0:
			if next < 0 {
				next = off + 1
			}
			return sb.String(), next, true
		case l&0xc0 == 0xc0:
			if off+1 >= len(b) {
				return "", 0, false
			}
			if hops++; hops > maxPointers {
				return "", 0, false
			}
			if next < 0 {
				next = off + 2
			}
			off = int(binary.BigEndian.Uint16(b[off:]) & 0x3fff)
		case l&0xc0 != 0:
			return "", 0, false
		default:
			if off+1+l > len(b) {
				return "", 0, false
			}
			if sb.Len() > 0 {
				sb.WriteByte('.')
			}
			for _, c := range b[off+1 : off+1+l] {
				switch {
				case c == '.' || c == '\\':
					sb.WriteByte('\\')
					sb.WriteByte(c)
				case c < 0x20 || c > 0x7e:
					sb.WriteByte('\\')
					s := strconv.Itoa(int(c))
					sb.WriteString(strings.Repeat("0", 3-len(s)) + s)
				default:
					sb.WriteByte(c)
				}
			}
			off += 1 + l
			if sb.Len() > 4*maxNameLen {
				return "", 0, false
			}
		}
	}
}

// appendName writes name as Envoy's serializer does: split at every dot,
// each part a label, then the root; false for a name over 255 bytes or a
// label over 63.
func appendName(dst []byte, name string) ([]byte, bool) {
	if len(name) > maxNameLen {
		return dst, false
	}
	for {
		i := strings.IndexByte(name, '.')
		label := name
		if i >= 0 {
			label = name[:i]
		}
		if len(label) > maxLabelLen {
			return dst, false
		}
		dst = append(dst, byte(len(label)))
		dst = append(dst, label...)
		if i < 0 {
			break
		}
		name = name[i+1:]
	}
	return append(dst, 0), true
}

// appendRecord writes r with its name; false when a name cannot be
// written.
func appendRecord(dst []byte, r record) ([]byte, bool) {
	start := len(dst)
	dst, ok := appendName(dst, r.name)
	if !ok {
		return dst[:start], false
	}
	dst = binary.BigEndian.AppendUint16(dst, r.rtype)
	dst = binary.BigEndian.AppendUint16(dst, classIN)
	dst = binary.BigEndian.AppendUint32(dst, r.ttl)
	if r.rtype == typeSRV {
		target, ok := appendName(nil, r.srv.name)
		if !ok {
			return dst[:start], false
		}
		dst = binary.BigEndian.AppendUint16(dst, uint16(6+len(target)))
		dst = binary.BigEndian.AppendUint16(dst, r.srv.priority)
		dst = binary.BigEndian.AppendUint16(dst, r.srv.weight)
		dst = binary.BigEndian.AppendUint16(dst, r.srv.port)
		return append(dst, target...), true
	}
	ip := r.ip.AsSlice()
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(ip)))
	return append(dst, ip...), true
}

// addAnswer stores an address answer to qu when the address's family is
// the one asked for; it reports whether it did.
func (q *queryContext) addAnswer(qu question, ttl uint32, ip netip.Addr) bool {
	return addAddress(&q.answers, qu.name, qu.qtype, ttl, ip)
}

// addAdditional stores an additional address record of a service target.
func (q *queryContext) addAdditional(name string, rtype uint16, ttl uint32, ip netip.Addr) bool {
	return addAddress(&q.additional, name, rtype, ttl, ip)
}

func addAddress(list *[]record, name string, rtype uint16, ttl uint32, ip netip.Addr) bool {
	switch rtype {
	case typeA:
		if !ip.Is4() {
			return false
		}
	case typeAAAA:
		if !ip.Is6() {
			return false
		}
	}
	*list = append(*list, record{name: name, rtype: rtype, ttl: ttl, ip: ip})
	return true
}

// addService stores an SRV answer to qu naming target t of service s.
func (q *queryContext) addService(qu question, s *service, t target) {
	if qu.qtype == typeSRV {
		q.answers = append(q.answers, record{name: qu.name, rtype: typeSRV, ttl: s.ttl, srv: t})
	}
}

// addressType is the record type of an address.
func addressType(ip netip.Addr) uint16 {
	if ip.Is4() {
		return typeA
	}
	return typeAAAA
}

// buildResponse serializes the response to q as Envoy's
// buildResponseBuffer does: the question, then the answers matching its
// name and type in the order they were found (from a random one when there
// are more than eight), at most eight and while the response stays within
// 512 bytes (Envoy counts 2 bytes for the header), without setting TC;
// each SRV answer brings the first additional record of its target.
// recursion is the RA flag (queries are forwarded); start picks the first
// answer when there are more than eight.
func buildResponse(q *queryContext, recursion bool, start func(n int) int) []byte {
	size := 2
	var qbuf, abuf, xbuf []byte
	var nq, na, nx uint16
	touched := 0
	for _, qu := range q.questions {
		var ok bool
		before := len(qbuf)
		qbuf, ok = appendName(qbuf, qu.name)
		if !ok {
			qbuf = qbuf[:before]
			continue
		}
		qbuf = binary.BigEndian.AppendUint16(qbuf, qu.qtype)
		qbuf = binary.BigEndian.AppendUint16(qbuf, qu.qclass)
		nq++
		size += len(qbuf)
		n := len(q.answers)
		if n == 0 {
			continue
		}
		idx := 0
		if n > maxAnswers {
			idx = start(n)
		}
		for int(na) < n && touched < n {
			a := q.answers[idx%n]
			idx++
			touched++
			if a.name != qu.name || a.rtype != qu.qtype {
				continue
			}
			if qu.qtype == typeSRV && !q.appendAdditional(&xbuf, &size, &nx, a.srv.name) {
				continue
			}
			enc, ok := appendRecord(nil, a)
			if !ok {
				continue
			}
			size += len(enc)
			if size > maxResponse {
				break
			}
			abuf = append(abuf, enc...)
			if na++; na == maxAnswers {
				break
			}
		}
	}
	rcode := responseCode(q, nq, na)
	flags := uint16(0x8000) | q.flags&0x7800 | q.flags&0x0100 | uint16(rcode)
	if recursion {
		flags |= 0x0080
	}
	out := make([]byte, 0, headerLen+len(qbuf)+len(abuf)+len(xbuf))
	out = binary.BigEndian.AppendUint16(out, q.id)
	out = binary.BigEndian.AppendUint16(out, flags)
	out = binary.BigEndian.AppendUint16(out, nq)
	out = binary.BigEndian.AppendUint16(out, na)
	out = binary.BigEndian.AppendUint16(out, 0)
	out = binary.BigEndian.AppendUint16(out, nx)
	out = append(out, qbuf...)
	out = append(out, abuf...)
	return append(out, xbuf...)
}

// appendAdditional writes the first additional record of target, if
// there is one, and counts it and its size; false when it cannot be
// written (Envoy then skips the answer). As in Envoy, the record stays
// even when its answer then does not fit.
func (q *queryContext) appendAdditional(buf *[]byte, size *int, n *uint16, target string) bool {
	for _, rr := range q.additional {
		if rr.name != target {
			continue
		}
		enc, ok := appendRecord(nil, rr)
		if !ok {
			return false
		}
		*size += len(enc)
		*buf = append(*buf, enc...)
		*n++
		return true
	}
	return true
}

// responseCode is Envoy's: FORMERR for what did not parse, NOTIMP for a
// question of a type other than A, AAAA and SRV, FORMERR when no question
// could be written back, NXDOMAIN without answers.
func responseCode(q *queryContext, questions, answers uint16) int {
	if !q.parsed {
		return rcodeFormErr
	}
	for _, qu := range q.questions {
		switch qu.qtype {
		case typeA, typeAAAA, typeSRV:
		default:
			return rcodeNotImp
		}
	}
	switch {
	case questions == 0:
		return rcodeFormErr
	case answers == 0:
		return rcodeNXDomain
	}
	return rcodeNoError
}
