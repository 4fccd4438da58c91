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
	unsupported.GetEndpoint().ObservabilityName = "not-implemented"
	cla := &endpointv3.ClusterLoadAssignment{ClusterName: "svc", Endpoints: []*endpointv3.LocalityLbEndpoints{
		{LbEndpoints: []*endpointv3.LbEndpoint{good}},
		{Priority: 200, LbEndpoints: []*endpointv3.LbEndpoint{good, unsupported}},
	}}
	err := ValidateLoadAssignment(cla, nil)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"endpoints[1].priority: value must be less than or equal to 128",
		"endpoints[1].lb_endpoints[1].endpoint.observability_name: ",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "lb_endpoints[0]") {
		t.Errorf("error %q: want only the unsupported entry refused", err)
	}
	// The assignment itself is left as it was.
	if len(cla.Endpoints[1].LbEndpoints) != 2 {
		t.Fatal("the check changed the assignment")
	}
}
