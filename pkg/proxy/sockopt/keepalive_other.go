//go:build !linux

package sockopt

import (
	"errors"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// TCPKeepalive is implemented on Linux only, where the listening socket's
// keep-alive settings pass to the connections it accepts.
func TCPKeepalive(*corev3.TcpKeepalive) (Set, error) {
	return nil, errors.New("a listener's TCP keep-alive is only supported on Linux")
}
