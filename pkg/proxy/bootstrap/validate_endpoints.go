package bootstrap

import (
	"errors"
	"fmt"
	"strconv"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
)

// ValidateLoadAssignment checks one load assignment from discovery (EDS)
// with the rules of a static cluster's load_assignment: its constraints
// and the support table, errors relative to the assignment. A field
// Outrigger does not implement is refused here, so that the update is
// rejected with its path rather than applied without it.
//
// The check of a large assignment would be most of an update's cost (the
// reflective walk takes some microseconds per entry, and the state of the
// world sends every entry for a one-endpoint change): an entry of the
// plain shape that meets its constraints (isPlainEndpoint, a few field
// reads) is known to pass without the walk, and so is the rest of an
// assignment of the plain shape (isPlainAssignment), which a response of
// many small assignments would otherwise pay a walk for each.
func ValidateLoadAssignment(cla *endpointv3.ClusterLoadAssignment, ext *extension.Registry) error {
	return validateLoadAssignment(cla, ext, plainEndpoints, plainAssignments)
}

// validateLoadAssignment is ValidateLoadAssignment, with the plain-shape
// shortcuts only when plain (the entries') and plainTop (the rest's) are
// true.
func validateLoadAssignment(cla *endpointv3.ClusterLoadAssignment, ext *extension.Registry, plain, plainTop bool) error {
	if cla == nil {
		return &FieldError{Reason: "no load assignment"}
	}
	var errs []error
	if !isPlainAssignment(cla, plainTop) {
		errs = topLoadAssignmentErrors(cla, ext)
	}
	for i, l := range cla.GetEndpoints() {
		for j, lbe := range l.GetLbEndpoints() {
			if isPlainEndpoint(lbe, plain) {
				continue
			}
			lbeErrs := constraintAndSupportErrors(lbe, ext)
			prefix := "endpoints[" + strconv.Itoa(i) + "].lb_endpoints[" + strconv.Itoa(j) + "]"
			for _, err := range lbeErrs {
				errs = append(errs, underPath(prefix, err))
			}
		}
	}
	return errors.Join(errs...)
}

// topLoadAssignmentErrors checks the assignment without its lb_endpoints
// entries: the same paths for everything else, localities keeping their
// places.
func topLoadAssignmentErrors(cla *endpointv3.ClusterLoadAssignment, ext *extension.Registry) []error {
	top := shallowWithout(cla.ProtoReflect(), "endpoints")
	list := top.Mutable(top.Descriptor().Fields().ByName("endpoints")).List()
	for _, l := range cla.GetEndpoints() {
		list.Append(protoreflect.ValueOfMessage(shallowWithout(l.ProtoReflect(), "lb_endpoints")))
	}
	return constraintAndSupportErrors(top.Interface().(*endpointv3.ClusterLoadAssignment), ext)
}

// shallowWithout is a new message of m's type sharing m's field values
// except the named one, which it leaves empty.
func shallowWithout(m protoreflect.Message, field protoreflect.Name) protoreflect.Message {
	out := m.New()
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Name() != field {
			out.Set(fd, v)
		}
		return true
	})
	return out
}

// underPath puts prefix in front of a FieldError's path.
func underPath(prefix string, err error) error {
	var fe *FieldError
	if !errors.As(err, &fe) {
		return fmt.Errorf("%s: %w", prefix, err)
	}
	path := prefix
	if fe.Path != "" {
		path += "." + fe.Path
	}
	return &FieldError{Path: path, Reason: fe.Reason}
}
