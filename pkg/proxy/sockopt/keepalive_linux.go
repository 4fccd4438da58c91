package sockopt

import (
	"fmt"
	"math"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"golang.org/x/sys/unix"
)

// TCPKeepalive is the options a listener's tcp_keepalive sets on its
// sockets before bind, as Envoy's buildTcpKeepaliveOptions does:
// SO_KEEPALIVE, then TCP_KEEPCNT, TCP_KEEPIDLE and TCP_KEEPINTVL for the
// values given (an unset value keeps the system's). Accepted connections
// inherit them from the listening socket. Errors name the field below ka.
func TCPKeepalive(ka *corev3.TcpKeepalive) (Set, error) {
	s := Set{{Level: unix.SOL_SOCKET, Name: unix.SO_KEEPALIVE, Int: 1}}
	for _, v := range []struct {
		field string
		set   bool
		value uint32
		name  int
	}{
		{"keepalive_probes", ka.GetKeepaliveProbes() != nil, ka.GetKeepaliveProbes().GetValue(), unix.TCP_KEEPCNT},
		{"keepalive_time", ka.GetKeepaliveTime() != nil, ka.GetKeepaliveTime().GetValue(), unix.TCP_KEEPIDLE},
		{"keepalive_interval", ka.GetKeepaliveInterval() != nil, ka.GetKeepaliveInterval().GetValue(), unix.TCP_KEEPINTVL},
	} {
		if !v.set {
			continue
		}
		if v.value > math.MaxInt32 {
			return nil, fmt.Errorf("%s: %d does not fit in a C int", v.field, v.value)
		}
		s = append(s, Option{Level: unix.IPPROTO_TCP, Name: v.name, Int: int(v.value)})
	}
	return s, nil
}
