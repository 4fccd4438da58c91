package bootstrap

import (
	"math/rand/v2"
	"slices"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// TestPlainEndpointKnowsEveryField fails when a message isPlainEndpoint
// reads gets a field it does not read (a newer API): the shortcut would
// pass an entry with that field unseen, whatever the table says of it.
func TestPlainEndpointKnowsEveryField(t *testing.T) {
	read := map[protoreflect.Message][]protoreflect.Name{
		(&endpointv3.LbEndpoint{}).ProtoReflect():  {"endpoint", "endpoint_name", "health_status", "metadata", "load_balancing_weight"},
		(&endpointv3.Endpoint{}).ProtoReflect():    {"address", "health_check_config", "hostname", "additional_addresses", "observability_name"},
		(&corev3.Address{}).ProtoReflect():         {"socket_address", "pipe", "envoy_internal_address"},
		(&corev3.SocketAddress{}).ProtoReflect():   {"protocol", "address", "port_value", "named_port", "resolver_name", "ipv4_compat", "network_namespace_filepath"},
		(&corev3.Metadata{}).ProtoReflect():        {"filter_metadata", "typed_filter_metadata"},
		(&wrapperspb.UInt32Value{}).ProtoReflect(): {"value"},
		// isPlainAssignment's.
		(&endpointv3.ClusterLoadAssignment{}).ProtoReflect(): {"cluster_name", "endpoints", "named_endpoints", "policy"},
		(&endpointv3.LocalityLbEndpoints{}).ProtoReflect(): {"locality", "metadata", "lb_endpoints", "load_balancer_endpoints",
			"leds_cluster_locality_config", "load_balancing_weight", "priority", "proximity"},
		(&corev3.Locality{}).ProtoReflect(): {"region", "zone", "sub_zone"},
	}
	for m, names := range read {
		fields := m.Descriptor().Fields()
		for i := range fields.Len() {
			if name := fields.Get(i).Name(); !slices.Contains(names, name) {
				t.Errorf("%s has a field %s that isPlainEndpoint does not read", m.Descriptor().FullName(), name)
			}
		}
	}
	if !plainEndpoints {
		t.Error("the support table restricts a field of the plain shape: the shortcut is off (update plainEndpointFields or isPlainEndpoint)")
	}
	if !plainAssignments {
		t.Error("the support table restricts a field of the plain assignment: the shortcut is off (update plainAssignmentFields or isPlainAssignment)")
	}
}

// TestPlainEndpointAgreesWithTheWalk generates entries from every field
// of the messages an endpoint is made of, with good, bad and unsupported
// values, and checks the shortcut against the reflective check: an entry
// it passes has no error there, and an entry made of plain fields only
// that has no error there is passed (else the shortcut would not be
// taken for what it is for). The assignments built from them get the
// same errors with and without the shortcut.
func TestPlainEndpointAgreesWithTheWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 10000))
	var all []*endpointv3.LbEndpoint
	shortcuts := 0
	for i := range 4000 {
		lbe, plainOnly := randomLbEndpoint(rng)
		walk := constraintAndSupportErrors(lbe, nil)
		fast := isPlainEndpoint(lbe, true)
		switch {
		case fast && len(walk) > 0:
			t.Fatalf("entry %d passed by the shortcut, refused by the check (%v): %v", i, walk, lbe)
		case plainOnly && len(walk) == 0 && !fast:
			t.Fatalf("entry %d of the plain shape passes the check but not the shortcut: %v", i, lbe)
		case !plainOnly && fast:
			t.Fatalf("entry %d has a field outside the plain shape and was passed by the shortcut: %v", i, lbe)
		}
		if fast {
			shortcuts++
		}
		all = append(all, lbe)
	}
	// The generator makes both kinds often enough for the comparison to
	// mean something.
	if shortcuts < len(all)/10 || shortcuts > len(all)*9/10 {
		t.Fatalf("%d of %d entries took the shortcut: the generator is off", shortcuts, len(all))
	}
	for start := 0; start < len(all); start += 40 {
		cla := &endpointv3.ClusterLoadAssignment{ClusterName: "svc", Endpoints: []*endpointv3.LocalityLbEndpoints{
			{LbEndpoints: all[start : start+20]},
			{Priority: 1, LbEndpoints: all[start+20 : start+40]},
		}}
		fast := validateLoadAssignment(cla, nil, true, true)
		walk := validateLoadAssignment(cla, nil, false, false)
		if errText(fast) != errText(walk) {
			t.Fatalf("entries %d to %d: with the shortcut %q, without %q", start, start+39, errText(fast), errText(walk))
		}
	}
}

// TestPlainAssignmentAgreesWithTheWalk generates assignments (their
// entries plain and good) with each field around the entries present or
// not, with good, bad and unsupported values, and checks the shortcut
// against the reflective check of the assignment: one it passes has no
// error there, one of the plain shape with no error there is passed, and
// the errors of validateLoadAssignment are the same with and without it.
func TestPlainAssignmentAgreesWithTheWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 1))
	shortcuts := 0
	const n = 2000
	for i := range n {
		cla, plainOnly := randomAssignment(rng)
		walk := topLoadAssignmentErrors(cla, nil)
		fast := isPlainAssignment(cla, true)
		switch {
		case fast && len(walk) > 0:
			t.Fatalf("assignment %d passed by the shortcut, refused by the check (%v): %v", i, walk, cla)
		case plainOnly && len(walk) == 0 && !fast:
			t.Fatalf("assignment %d of the plain shape passes the check but not the shortcut: %v", i, cla)
		case !plainOnly && fast:
			t.Fatalf("assignment %d has a field outside the plain shape and was passed by the shortcut: %v", i, cla)
		}
		if fast {
			shortcuts++
		}
		if a, b := errText(validateLoadAssignment(cla, nil, true, true)), errText(validateLoadAssignment(cla, nil, true, false)); a != b {
			t.Fatalf("assignment %d: with the shortcut %q, without %q", i, a, b)
		}
	}
	if shortcuts < n/10 || shortcuts > n*9/10 {
		t.Fatalf("%d of %d assignments took the shortcut: the generator is off", shortcuts, n)
	}
}

// randomAssignment makes a load assignment of plain, good entries with
// each field around them present or not, with a good, bad or unsupported
// value; plain says whether it has only fields of the plain shape (good
// or bad values).
func randomAssignment(rng *rand.Rand) (cla *endpointv3.ClusterLoadAssignment, plain bool) {
	plain = true
	odd := func(percent int) bool { return rng.IntN(100) < percent }
	cla = &endpointv3.ClusterLoadAssignment{}
	if !odd(5) {
		cla.ClusterName = "svc"
	}
	if odd(4) {
		cla.Policy = &endpointv3.ClusterLoadAssignment_Policy{}
		plain = false
	}
	if odd(3) {
		cla.NamedEndpoints = map[string]*endpointv3.Endpoint{"n": {}}
		plain = false
	}
	for l := range rng.IntN(4) {
		lle := &endpointv3.LocalityLbEndpoints{LbEndpoints: []*endpointv3.LbEndpoint{lbEndpoint(uint32(8000 + l))}}
		cla.Endpoints = append(cla.Endpoints, lle)
		if odd(30) {
			lle.Locality = &corev3.Locality{}
			if odd(50) {
				lle.Locality.Region = "r"
			}
			if odd(50) {
				lle.Locality.Zone = "z"
			}
			if odd(50) {
				lle.Locality.SubZone = "s"
			}
		}
		switch {
		case odd(4):
			lle.LoadBalancingWeight = wrapperspb.UInt32(0)
		case odd(20):
			lle.LoadBalancingWeight = wrapperspb.UInt32(1 + rng.Uint32N(200))
		}
		switch {
		case odd(4):
			lle.Priority = 129 + rng.Uint32N(10)
		case odd(20):
			lle.Priority = rng.Uint32N(129)
		}
		if odd(2) {
			lle.Metadata = &corev3.Metadata{}
			plain = false
		}
		if odd(2) {
			lle.Proximity = wrapperspb.UInt32(1)
			plain = false
		}
		switch {
		case odd(2):
			//lint:ignore SA1019 the shortcut must refuse the deprecated list too
			lle.LbConfig = &endpointv3.LocalityLbEndpoints_LoadBalancerEndpoints{LoadBalancerEndpoints: &endpointv3.LocalityLbEndpoints_LbEndpointList{}}
			plain = false
		case odd(2):
			lle.LbConfig = &endpointv3.LocalityLbEndpoints_LedsClusterLocalityConfig{LedsClusterLocalityConfig: &endpointv3.LedsClusterLocalityConfig{}}
			plain = false
		}
	}
	return cla, plain
}

// errText is err's text, "" for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// randomLbEndpoint makes an lb_endpoints entry with each field of its
// messages present or not, with a good, bad or unsupported value; plain
// says whether it has only fields of the plain shape (good or bad
// values).
func randomLbEndpoint(rng *rand.Rand) (lbe *endpointv3.LbEndpoint, plain bool) {
	plain = true
	odd := func(percent int) bool { return rng.IntN(100) < percent }
	lbe = &endpointv3.LbEndpoint{}
	switch {
	case odd(3):
		lbe.HostIdentifier = &endpointv3.LbEndpoint_EndpointName{EndpointName: "named"}
		plain = false
	case odd(3):
		// No host identifier at all: passes the check, not the
		// shortcut (the shape has an address).
		plain = false
	default:
		ep := &endpointv3.Endpoint{}
		lbe.HostIdentifier = &endpointv3.LbEndpoint_Endpoint{Endpoint: ep}
		if odd(4) {
			ep.HealthCheckConfig = &endpointv3.Endpoint_HealthCheckConfig{PortValue: 9}
			plain = false
		}
		if odd(3) {
			ep.AdditionalAddresses = []*endpointv3.Endpoint_AdditionalAddress{{}}
			plain = false
		}
		if odd(3) {
			ep.ObservabilityName = "obs"
			plain = false
		}
		if odd(20) {
			ep.Hostname = "backend.example"
		}
		switch {
		case odd(3):
			// No address.
			plain = false
		case odd(3):
			ep.Address = &corev3.Address{Address: &corev3.Address_Pipe{Pipe: &corev3.Pipe{Path: "/tmp/sock"}}}
			plain = false
		case odd(3):
			ep.Address = &corev3.Address{Address: &corev3.Address_EnvoyInternalAddress{EnvoyInternalAddress: &corev3.EnvoyInternalAddress{}}}
			plain = false
		case odd(2):
			ep.Address = &corev3.Address{}
			plain = false
		default:
			sa := &corev3.SocketAddress{Address: "10.0.0.1"}
			ep.Address = &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: sa}}
			if odd(4) {
				sa.Address = ""
			}
			switch {
			case odd(4):
				sa.PortSpecifier = &corev3.SocketAddress_NamedPort{NamedPort: "http"}
				plain = false
			case odd(4):
				// No port.
			case odd(5):
				sa.PortSpecifier = &corev3.SocketAddress_PortValue{PortValue: 65536 + rng.Uint32N(1000)}
			default:
				sa.PortSpecifier = &corev3.SocketAddress_PortValue{PortValue: rng.Uint32N(65536)}
			}
			switch {
			case odd(3):
				sa.Protocol = corev3.SocketAddress_UDP
				plain = false
			case odd(2):
				sa.Protocol = corev3.SocketAddress_Protocol(7) // undefined
				plain = false
			}
			if odd(3) {
				sa.ResolverName = "custom"
				plain = false
			}
			if odd(3) {
				sa.NetworkNamespaceFilepath = "/var/run/netns/x"
				plain = false
			}
			if odd(10) {
				sa.Ipv4Compat = true
			}
		}
	}
	if odd(20) {
		lbe.HealthStatus = corev3.HealthStatus(rng.IntN(8)) // 6 and 7 are undefined
	}
	switch {
	case odd(5):
		lbe.LoadBalancingWeight = wrapperspb.UInt32(0)
	case odd(20):
		lbe.LoadBalancingWeight = wrapperspb.UInt32(1 + rng.Uint32N(200))
	}
	if odd(20) {
		lbe.Metadata = &corev3.Metadata{}
		if odd(80) {
			key := "envoy.lb"
			if odd(15) {
				key = ""
			}
			lbe.Metadata.FilterMetadata = map[string]*structpb.Struct{key: {Fields: map[string]*structpb.Value{"canary": structpb.NewBoolValue(true)}}}
		}
		if odd(15) {
			lbe.Metadata.TypedFilterMetadata = map[string]*anypb.Any{"x": {TypeUrl: "type.googleapis.com/google.protobuf.Struct"}}
			plain = false
		}
	}
	if odd(5) {
		// Unknown fields: neither check looks at them (the decoder does).
		lbe.ProtoReflect().SetUnknown(protoreflect.RawFields{0xf8, 0x3e, 0x01})
	}
	return proto.CloneOf(lbe), plain
}
