// Package ipdetection is the vocabulary of Envoy's original IP detection
// extensions (category envoy.http.original_ip_detection): how the
// connection manager's original_ip_detection_extensions find a request's
// client address when use_remote_address is off. The extensions are
// packages below this one; x-forwarded-for's parsing, which the connection
// manager's own default shares, is here.
package ipdetection

import (
	"errors"
	"net/netip"
	"strings"

	"google.golang.org/protobuf/proto"
)

// Category is Envoy's category of original IP detection extensions.
const Category = "envoy.http.original_ip_detection"

// Input is what an extension sees of a request.
type Input struct {
	// Header returns the first value of a request header (names are
	// lower case) and whether the request has it.
	Header func(name string) (string, bool)
	// Remote is the address of the connection's peer.
	Remote netip.Addr
}

// Result is an extension's answer. With neither Addr nor RejectStatus,
// the extension found nothing and the next one is asked.
type Result struct {
	// Addr is the client's address, when found.
	Addr netip.Addr
	// Trusted says Addr may make the request internal
	// (internal_address_config), Envoy's allow_trusted_address_checks.
	Trusted bool
	// RejectStatus, when not 0, refuses the request with that status.
	RejectStatus int
}

// Detector is a compiled extension.
type Detector interface {
	Detect(in Input) Result
}

// Factory compiles the configuration of an extension.
type Factory interface {
	Compile(config proto.Message) (Detector, error)
}

// ErrBadXFF is what LastXFF reports for a list without a usable entry.
var ErrBadXFF = errors.New("no address at that position of x-forwarded-for")

// LastXFF returns the address skip entries from the right of an
// x-forwarded-for list ("client, proxy1, proxy2"), and whether the list
// holds one address only, as Envoy's getLastAddressFromXFF does: an entry
// that is not an IP address yields an error.
func LastXFF(xff string, skip uint32) (netip.Addr, bool, error) {
	single := !strings.Contains(xff, ",")
	rest := xff
	for i := uint32(0); ; i++ {
		entry := rest
		j := strings.LastIndexByte(rest, ',')
		if j >= 0 {
			entry, rest = rest[j+1:], rest[:j]
		}
		if i == skip {
			ip, err := netip.ParseAddr(strings.TrimSpace(entry))
			if err != nil {
				return netip.Addr{}, false, ErrBadXFF
			}
			return ip, single, nil
		}
		if j < 0 {
			return netip.Addr{}, false, ErrBadXFF
		}
	}
}
