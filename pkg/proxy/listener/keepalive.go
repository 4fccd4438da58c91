package listener

import (
	"errors"
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/sockopt"
)

// keepaliveOptions compiles a listener's or an additional address's
// tcp_keepalive (at path) into socket options; none when ka is unset or
// turns keep-alive off. As Envoy, a value of 0 in any of its fields turns
// it off: that is how an additional address opts out of the listener's.
func (l *Listener) keepaliveOptions(path string, ka *corev3.TcpKeepalive, primary socketAddress) (sockopt.Set, error) {
	if ka == nil || keepaliveDisabled(ka) {
		return nil, nil
	}
	if primary.isUDP() {
		return nil, errors.New(path + ": not supported on a UDP listener")
	}
	s, err := sockopt.TCPKeepalive(ka)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// keepaliveDisabled reports whether a TcpKeepalive sets one of its values
// to 0, Envoy's way of turning keep-alive off.
func keepaliveDisabled(ka *corev3.TcpKeepalive) bool {
	for _, v := range []*wrapperspb.UInt32Value{ka.GetKeepaliveProbes(), ka.GetKeepaliveTime(), ka.GetKeepaliveInterval()} {
		if v != nil && v.GetValue() == 0 {
			return true
		}
	}
	return false
}

// concatOptions joins option sets into a new one, in order.
func concatOptions(sets ...sockopt.Set) sockopt.Set {
	var out sockopt.Set
	for _, s := range sets {
		out = append(out, s...)
	}
	return out
}
