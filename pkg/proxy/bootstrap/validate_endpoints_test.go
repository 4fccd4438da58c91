package bootstrap

import (
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
)

func lbEndpoint(port uint32) *endpointv3.LbEndpoint {
	return &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
		Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address: "127.0.0.1", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port}}}}}}}
}

func TestValidateLoadAssignment(t *testing.T) {
	good, unsupported := lbEndpoint(80), lbEndpoint(81)
	unsupported.GetEndpoint().HealthCheckConfig = &endpointv3.Endpoint_HealthCheckConfig{PortValue: 9}
	cla := &endpointv3.ClusterLoadAssignment{ClusterName: "svc", Endpoints: []*endpointv3.LocalityLbEndpoints{
		{LbEndpoints: []*endpointv3.LbEndpoint{good}},
		{Priority: 200, LbEndpoints: []*endpointv3.LbEndpoint{good, unsupported}},
	}}
	var passed []*endpointv3.LbEndpoint
	err := ValidateLoadAssignment(cla, nil, nil, func(l *endpointv3.LbEndpoint) { passed = append(passed, l) })
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"endpoints[1].priority: value must be less than or equal to 128",
		"endpoints[1].lb_endpoints[1].endpoint.health_check_config: ",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "lb_endpoints[0]") || len(passed) != 2 || passed[0] != good || passed[1] != good {
		t.Errorf("error %q, passed %v: want only the unsupported entry refused and the good one passed twice", err, passed)
	}
	// The assignment itself is left as it was.
	if len(cla.Endpoints[1].LbEndpoints) != 2 {
		t.Fatal("the check changed the assignment")
	}

	// An entry checked before is not checked again: an unsupported one
	// reported as checked passes (which the caller only says of messages
	// that passed).
	cla.Endpoints[1].Priority = 0
	err = ValidateLoadAssignment(cla, nil, func(l *endpointv3.LbEndpoint) bool { return l == unsupported }, nil)
	if err != nil {
		t.Errorf("skipped entry checked: %v", err)
	}
	if err := ValidateLoadAssignment(cla, nil, nil, nil); err == nil {
		t.Error("unsupported entry accepted")
	}
}
