package xds

import "google.golang.org/protobuf/proto"

// maxReusedResource bounds the wire form of a resource kept whole for the
// next response: the kept bytes are the map's key, so a large resource
// would double its memory; the large load assignments are decoded by
// parts instead (see endpointReuse).
const maxReusedResource = 4 << 10

// clusterTypeURL is the type of cluster resources, whose decoder keeps
// them for the next response.
const clusterTypeURL = "type.googleapis.com/envoy.config.cluster.v3.Cluster"

// resourceReuse keeps the decoded resources of the last response by wire
// form, so that a resource the next one repeats byte for byte is not
// decoded again and is the same message: the state of the world resends
// every cluster and every load assignment at each change, and Envoy too
// recognises an unchanged resource by its serialised form (the cluster
// manager's config hash) rather than field by field. The consumers then
// find it unchanged by identity before any field-by-field comparison.
// Messages are never changed once decoded, so sharing one between
// updates is safe. Only resources decoded without unknown fields are
// kept: the result of a decode then depends on the bytes alone.
type resourceReuse struct {
	// known are the last response's resources by wire form; gen tells
	// the ones this response had.
	known map[string]*reusedResource
	gen   uint64
	// seen counts the entries of known this response had: when it had
	// them all, end has nothing to forget and skips its pass.
	seen int
}

// reusedResource is a decoded resource and the last response that had it.
type reusedResource struct {
	msg proto.Message
	gen uint64
}

// begin starts a response.
func (r *resourceReuse) begin() { r.gen++; r.seen = 0 }

// end ends a response: the resources it did not have are forgotten.
func (r *resourceReuse) end() {
	if r.seen == len(r.known) {
		return
	}
	for k, e := range r.known {
		if e.gen != r.gen {
			delete(r.known, k)
		}
	}
}

// lookup returns the message decoded from value by an earlier response,
// and marks it as this response's.
func (r *resourceReuse) lookup(value []byte) (proto.Message, bool) {
	e := r.known[string(value)]
	if e == nil {
		return nil, false
	}
	if e.gen != r.gen {
		e.gen = r.gen
		r.seen++
	}
	return e.msg, true
}

// keep remembers m, decoded from value, for the next response.
func (r *resourceReuse) keep(value []byte, m proto.Message) {
	if len(value) > maxReusedResource {
		return
	}
	if r.known == nil {
		r.known = map[string]*reusedResource{}
	}
	r.known[string(value)] = &reusedResource{msg: m, gen: r.gen}
	r.seen++
}
