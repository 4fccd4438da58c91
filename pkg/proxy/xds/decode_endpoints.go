package xds

import (
	"bytes"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/outrigger-dev/outrigger/pkg/proxy/bootstrap"
)

// minReusedEndpoints is the size from which a load assignment's endpoints
// are decoded one by one and kept for the next response: below it a whole
// decode is cheap, and the kept wire forms would cost more memory (one
// entry per small cluster) than they save.
const minReusedEndpoints = 64

// endpointTypeURL is the type of the load assignments decoded by parts.
const endpointTypeURL = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"

// Field numbers of the load assignment's repeated endpoint lists.
const (
	claEndpointsField   protowire.Number = 2 // ClusterLoadAssignment.endpoints
	lleLbEndpointsField protowire.Number = 2 // LocalityLbEndpoints.lb_endpoints
)

// endpointReuse decodes large load assignments by parts, so that an
// endpoint the last response had too, byte for byte, is not decoded
// again: the state of the world sends a cluster's whole assignment for a
// one-endpoint change, and Envoy too keeps what did not change. The
// message of an unchanged lb_endpoints entry is the last response's
// (messages are never changed once decoded). Only plain wire forms are
// decoded so (bootstrap.Decoder.DecodePlain); anything else takes the
// whole decode with its checks.
type endpointReuse struct {
	// known are the lb_endpoints entries of the last response's large
	// assignments, by wire form; gen tells the ones this response used.
	known map[string]*reusedEndpoint
	gen   uint64
	// seen counts the entries of known this response used: when it used
	// them all, end has nothing to forget and skips its pass.
	seen int
	// last are the large assignments of the last response, by cluster
	// name: an entry is first compared with the one at its place there.
	last map[string]*assignmentWire
}

// assignmentWire is a large assignment as a response sent it: a copy of
// its wire form and the places of its lb_endpoints entries in it, in
// order, with their decoded entries. The next response's assignment of
// the same name is mostly the same bytes at the same places: comparing
// an entry with the one at its place reads both wire forms in order,
// where the lookup in known hashes the entry and reads a map slot and a
// key elsewhere in memory, for each of 10,000 entries. spare is the
// previous copy, whose memory the next one reuses.
type assignmentWire struct {
	gen     uint64
	wire    []byte
	entries []placedEntry
	spare   *assignmentWire
}

// placedEntry is an entry's place in an assignmentWire's wire form.
type placedEntry struct {
	start, end int
	e          *reusedEndpoint
}

// reusedEndpoint is a decoded lb_endpoints entry and the last response
// that had it.
type reusedEndpoint struct {
	msg *endpointv3.LbEndpoint
	gen uint64
}

// begin starts a response.
func (r *endpointReuse) begin() { r.gen++; r.seen = 0 }

// end ends a response: the entries and assignments it did not have are
// forgotten.
func (r *endpointReuse) end() {
	for name, a := range r.last {
		if a.gen != r.gen {
			delete(r.last, name)
		}
	}
	if r.seen == len(r.known) {
		return
	}
	for k, e := range r.known {
		if e.gen != r.gen {
			delete(r.known, k)
		}
	}
}

// decode decodes a load assignment's wire form (at depth, as
// DecodeWire's) by parts; false when it is small or not plain, for the
// whole decode.
func (r *endpointReuse) decode(dec bootstrap.Decoder, depth int, value []byte) (*endpointv3.ClusterLoadAssignment, bool) {
	rest, groups, ok := splitField(value, claEndpointsField)
	if !ok {
		return nil, false
	}
	// A group's entries are read from its wire form as they are decoded,
	// not listed first (a list of 10,000 byte slices was most of what a
	// one-endpoint change allocated here).
	type group struct {
		wire    []byte
		rest    []byte
		entries int
	}
	gs := make([]group, len(groups))
	total := 0
	for i, g := range groups {
		gs[i].wire = g
		if gs[i].rest, gs[i].entries, ok = splitCount(g, lleLbEndpointsField); !ok {
			return nil, false
		}
		total += gs[i].entries
	}
	if total < minReusedEndpoints {
		return nil, false
	}
	// The fields apart from the lists decode as they would with them:
	// repeated message fields only append, in wire order.
	cla := new(endpointv3.ClusterLoadAssignment)
	if !dec.DecodePlain(depth, rest, cla) {
		return nil, false
	}
	if r.known == nil {
		r.known = make(map[string]*reusedEndpoint, total)
	}
	prev := r.last[cla.GetClusterName()]
	next := &assignmentWire{}
	if prev != nil && prev.spare != nil {
		next = prev.spare
	}
	next.gen, next.spare = r.gen, nil
	next.wire = append(next.wire[:0], value...)
	next.entries = next.entries[:0]
	cursor, placed := 0, true
	cla.Endpoints = make([]*endpointv3.LocalityLbEndpoints, 0, len(gs))
	for _, g := range gs {
		lle := new(endpointv3.LocalityLbEndpoints)
		if !dec.DecodePlain(depth+1, g.rest, lle) {
			return nil, false
		}
		lle.LbEndpoints = make([]*endpointv3.LbEndpoint, 0, g.entries)
		for b := g.wire; len(b) > 0; {
			// g.wire parsed in splitCount.
			n, typ, tagLen := protowire.ConsumeTag(b)
			valLen := protowire.ConsumeFieldValue(n, typ, b[tagLen:])
			field := b[tagLen : tagLen+valLen]
			b = b[tagLen+valLen:]
			if n != lleLbEndpointsField || typ != protowire.BytesType {
				continue
			}
			v, _ := protowire.ConsumeBytes(field)
			// v is a slice of value, which next.wire copies: its place
			// there is how far its capacity falls short of value's,
			// checked by address (a place found otherwise would match
			// other bytes than the entry's: no places are kept then).
			start := cap(value) - cap(v)
			if start < 0 || start+len(v) > len(value) || len(v) > 0 && &value[start] != &v[0] {
				placed = false
			}
			var e *reusedEndpoint
			if prev != nil {
				// At its place, or one further on after a removal.
				for c := cursor; c < len(prev.entries) && c <= cursor+1; c++ {
					if pe := prev.entries[c]; bytes.Equal(v, prev.wire[pe.start:pe.end]) {
						e, cursor = pe.e, c+1
						break
					}
				}
			}
			if e == nil {
				e = r.known[string(v)]
			}
			if e == nil {
				lbe := new(endpointv3.LbEndpoint)
				if !dec.DecodePlain(depth+2, v, lbe) {
					return nil, false
				}
				e = &reusedEndpoint{msg: lbe}
				r.known[string(v)] = e
			}
			if e.gen != r.gen {
				r.seen++
				e.gen = r.gen
			}
			next.entries = append(next.entries, placedEntry{start, start + len(v), e})
			lle.LbEndpoints = append(lle.LbEndpoints, e.msg)
		}
		cla.Endpoints = append(cla.Endpoints, lle)
	}
	if !placed {
		delete(r.last, cla.GetClusterName())
		return cla, true
	}
	if prev != nil {
		prev.spare = nil
		next.spare = prev
	}
	if r.last == nil {
		r.last = map[string]*assignmentWire{}
	}
	r.last[cla.GetClusterName()] = next
	return cla, true
}

// splitField separates the length-delimited occurrences of field num from
// the rest of a message's wire form (the rest in order, as it was); false
// when b does not parse.
func splitField(b []byte, num protowire.Number) (rest []byte, values [][]byte, ok bool) {
	// The values are counted first (reading tags and lengths only), so
	// that a list of 10,000 is allocated once rather than grown.
	n, ok := countField(b, num)
	if !ok {
		return nil, nil, false
	}
	if n > 0 {
		values = make([][]byte, 0, n)
	}
	for len(b) > 0 {
		n, typ, tagLen := protowire.ConsumeTag(b)
		if tagLen < 0 {
			return nil, nil, false
		}
		valLen := protowire.ConsumeFieldValue(n, typ, b[tagLen:])
		if valLen < 0 {
			return nil, nil, false
		}
		if n == num && typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(b[tagLen : tagLen+valLen])
			values = append(values, v)
		} else {
			rest = append(rest, b[:tagLen+valLen]...)
		}
		b = b[tagLen+valLen:]
	}
	return rest, values, true
}

// splitCount is splitField counting the occurrences of field num rather
// than listing them.
func splitCount(b []byte, num protowire.Number) (rest []byte, n int, ok bool) {
	for len(b) > 0 {
		f, typ, tagLen := protowire.ConsumeTag(b)
		if tagLen < 0 {
			return nil, 0, false
		}
		valLen := protowire.ConsumeFieldValue(f, typ, b[tagLen:])
		if valLen < 0 {
			return nil, 0, false
		}
		if f == num && typ == protowire.BytesType {
			n++
		} else {
			rest = append(rest, b[:tagLen+valLen]...)
		}
		b = b[tagLen+valLen:]
	}
	return rest, n, true
}

// countField counts the length-delimited occurrences of field num in a
// message's wire form; false when b does not parse.
func countField(b []byte, num protowire.Number) (int, bool) {
	n := 0
	for len(b) > 0 {
		f, typ, tagLen := protowire.ConsumeTag(b)
		if tagLen < 0 {
			return 0, false
		}
		valLen := protowire.ConsumeFieldValue(f, typ, b[tagLen:])
		if valLen < 0 {
			return 0, false
		}
		if f == num && typ == protowire.BytesType {
			n++
		}
		b = b[tagLen+valLen:]
	}
	return n, true
}
