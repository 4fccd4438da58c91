package udpproxy

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	xdsmatcherv3 "github.com/cncf/xds/go/xds/type/matcher/v3"
	udpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/udp/udp_proxy/v3"
	networkinputsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/matching/common_inputs/network/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpmatch"
)

// addresses are what the routing matcher's inputs read of a datagram: the
// listener's address it came in on and its sender's.
type addresses struct {
	local, peer netip.AddrPort
}

// matcher is the udp_proxy's compiled matcher: the xDS match tree over a
// datagram's addresses whose actions are clusters, as Envoy's UDP router
// evaluates it.
type matcher = httpmatch.Tree[addresses, string]

// compileMatcher compiles the udp_proxy's matcher; errors name the field
// below it. clusters collects the clusters its actions name.
func compileMatcher(m *xdsmatcherv3.Matcher, clusters map[string]bool) (*matcher, error) {
	return httpmatch.CompileTree(m, func(tc *xdscorev3.TypedExtensionConfig, path string) (string, error) {
		c, err := compileRoute(tc, path)
		if err == nil {
			clusters[c] = true
		}
		return c, err
	}, compileInput)
}

// compileRoute reads a Route action: the only action of Envoy's UDP router.
func compileRoute(tc *xdscorev3.TypedExtensionConfig, path string) (string, error) {
	a := tc.GetTypedConfig()
	if a == nil {
		return "", errors.New(path + ".typed_config: a " + string(proto.MessageName(&udpproxyv3.Route{})) + " action is required")
	}
	msg, err := a.UnmarshalNew()
	if err != nil {
		return "", fmt.Errorf("%s.typed_config: %w", path, err)
	}
	r, ok := msg.(*udpproxyv3.Route)
	if !ok {
		return "", fmt.Errorf("%s.typed_config: action %s is not supported by the UDP proxy (only %s)", path, proto.MessageName(msg), proto.MessageName(&udpproxyv3.Route{}))
	}
	if r.GetCluster() == "" {
		return "", errors.New(path + ".typed_config.cluster: must not be empty")
	}
	return r.GetCluster(), nil
}

// compileInput compiles one of the network inputs Envoy's UDP router
// reads: the source and destination IP and port.
func compileInput(tc *xdscorev3.TypedExtensionConfig, path string) (httpmatch.Input[addresses], error) {
	a := tc.GetTypedConfig()
	if a == nil {
		return nil, errors.New(path + ".typed_config: an input is required")
	}
	msg, err := a.UnmarshalNew()
	if err != nil {
		return nil, fmt.Errorf("%s.typed_config: %w", path, err)
	}
	switch msg.(type) {
	case *networkinputsv3.SourceIPInput:
		return func(a addresses) (string, bool) { return a.peer.Addr().Unmap().String(), true }, nil
	case *networkinputsv3.SourcePortInput:
		return func(a addresses) (string, bool) { return strconv.Itoa(int(a.peer.Port())), true }, nil
	case *networkinputsv3.DestinationIPInput:
		return func(a addresses) (string, bool) { return a.local.Addr().Unmap().String(), true }, nil
	case *networkinputsv3.DestinationPortInput:
		return func(a addresses) (string, bool) { return strconv.Itoa(int(a.local.Port())), true }, nil
	}
	return nil, fmt.Errorf("%s.typed_config: input %s is not supported by the UDP proxy (source and destination IP and port inputs only)", path, proto.MessageName(msg))
}
