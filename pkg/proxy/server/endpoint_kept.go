package server

import (
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/proto"
)

// minKeptMessage is the size (in endpoints) from which an accepted load
// assignment is kept as the decoded message rather than its wire form.
const minKeptMessage = 64

// keptAssignment is an accepted load assignment as kept for /config_dump
// and for the clusters added later: a small one as its wire form (a few
// dozen bytes where the messages of a one-endpoint assignment take some
// six hundred, for every cluster), decoded when asked for; a large one as
// the message, whose entries the next response's decoding shares and
// whose encoding would cost every update. The zero value is none.
type keptAssignment struct {
	msg  *endpointv3.ClusterLoadAssignment
	wire []byte
}

// keepAssignment keeps cla (never changed afterwards).
func keepAssignment(cla *endpointv3.ClusterLoadAssignment) keptAssignment {
	n := 0
	for _, lle := range cla.GetEndpoints() {
		n += len(lle.GetLbEndpoints())
	}
	if n >= minKeptMessage {
		return keptAssignment{msg: cla}
	}
	wire, err := proto.MarshalOptions{Deterministic: true}.Marshal(cla)
	if err != nil || len(wire) == 0 {
		// Nothing to gain (an empty assignment) or nothing to lose.
		return keptAssignment{msg: cla}
	}
	return keptAssignment{wire: wire}
}

// get returns the assignment, nil for none.
func (k keptAssignment) get() *endpointv3.ClusterLoadAssignment {
	if k.msg != nil || k.wire == nil {
		return k.msg
	}
	cla := new(endpointv3.ClusterLoadAssignment)
	if err := proto.Unmarshal(k.wire, cla); err != nil {
		// It was encoded here from a valid message.
		return nil
	}
	return cla
}
