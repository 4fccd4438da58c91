package filterstate

import (
	"net/netip"
	"strconv"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
)

// The keys of the well-known objects Outrigger's filters read, beside
// netfilter's ClusterStateKey, DynamicPortStateKey and DynamicHostStateKey.
const (
	// OriginalDstAddressKey is the address an ORIGINAL_DST cluster
	// connects a connection to, in place of its original destination.
	OriginalDstAddressKey = "envoy.network.transport_socket.original_dst_address"
	// GenericString is the factory of plain string objects under any key.
	GenericString = "envoy.string"
	// GenericHashableString is the factory of string objects that hash
	// policies hash, under any key.
	GenericHashableString = "envoy.hashable_string"
)

// Factory creates an object from its bytes, false when they do not make
// one (Envoy's createFromBytes returning null: the value is skipped).
type Factory func(data string) (accesslog.FilterStateObject, bool)

// FactoryOf returns the object factory registered under name (Envoy's
// ObjectFactory registry): the generic string factories and the factories
// of the well-known keys whose consumers Outrigger has. A key Outrigger
// reads nowhere has no factory, so that a configuration setting it is
// refused rather than silently useless.
func FactoryOf(name string) (Factory, bool) {
	switch name {
	case GenericString, netfilter.ClusterStateKey, netfilter.DynamicHostStateKey:
		return newString, true
	case GenericHashableString:
		return newHashableString, true
	case netfilter.DynamicPortStateKey:
		return newUInt32, true
	case OriginalDstAddressKey:
		return newAddress, true
	}
	return nil, false
}

func newString(data string) (accesslog.FilterStateObject, bool) { return String(data), true }

func newHashableString(data string) (accesslog.FilterStateObject, bool) {
	return HashableString(data), true
}

// newUInt32 parses a decimal number that fits 32 bits, as Envoy's
// SimpleAtoi.
func newUInt32(data string) (accesslog.FilterStateObject, bool) {
	n, err := strconv.ParseUint(data, 10, 32)
	if err != nil {
		return nil, false
	}
	return UInt32(n), true
}

// newAddress parses an IP:PORT address ([IPv6]:PORT).
func newAddress(data string) (accesslog.FilterStateObject, bool) {
	ap, err := netip.ParseAddrPort(data)
	if err != nil {
		return nil, false
	}
	return Address(ap), true
}
