// Package filterstate is the vocabulary of filter state objects: the
// values the set_filter_state filters create from bytes (Envoy's
// StreamInfo::FilterState::ObjectFactory) and that the filters reading
// Envoy's well-known keys consume (tcp_proxy's cluster, the dynamic
// forward proxy's port, the original destination address). Every object
// is an accesslog.FilterStateObject, so %FILTER_STATE% shows it.
package filterstate

import (
	"net/netip"
	"strconv"

	"github.com/cespare/xxhash/v2"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

var (
	_ accesslog.FilterStateObject  = String("")
	_ accesslog.FilterStateObject  = HashableString("")
	_ accesslog.FilterStateObject  = UInt32(0)
	_ accesslog.FilterStateFielder = Address{}
)

// String is a string value (Envoy's StringAccessor): PLAIN is the string,
// TYPED a google.protobuf.StringValue.
type String string

// FilterStateString implements accesslog.FilterStateObject.
func (s String) FilterStateString() (string, bool) { return string(s), true }

// FilterStateProto implements accesslog.FilterStateObject.
func (s String) FilterStateProto() proto.Message { return wrapperspb.String(string(s)) }

// HashableString is a String that hash policies can hash (Envoy's
// envoy.hashable_string): its hash is the xxHash64 of the string.
type HashableString string

// FilterStateString implements accesslog.FilterStateObject.
func (s HashableString) FilterStateString() (string, bool) { return string(s), true }

// FilterStateProto implements accesslog.FilterStateObject.
func (s HashableString) FilterStateProto() proto.Message { return wrapperspb.String(string(s)) }

// Hash implements Hashable.
func (s HashableString) Hash() (uint64, bool) { return xxhash.Sum64String(string(s)), true }

// Hashable is an object a hash policy's filter_state entry can hash
// (Envoy's Hashable); the others give no hash.
type Hashable interface {
	Hash() (uint64, bool)
}

// UInt32 is a number (Envoy's UInt32Accessor): PLAIN is its decimal form,
// TYPED a google.protobuf.UInt32Value.
type UInt32 uint32

// FilterStateString implements accesslog.FilterStateObject.
func (n UInt32) FilterStateString() (string, bool) {
	return strconv.FormatUint(uint64(n), 10), true
}

// FilterStateProto implements accesslog.FilterStateObject.
func (n UInt32) FilterStateProto() proto.Message { return wrapperspb.UInt32(uint32(n)) }

// Address is an IP address and port (Envoy's Network::AddressObject):
// PLAIN is "ip:port" ("[ip]:port" for IPv6), with the fields ip and port;
// it has no TYPED form.
type Address netip.AddrPort

// FilterStateString implements accesslog.FilterStateObject.
func (a Address) FilterStateString() (string, bool) {
	return netip.AddrPort(a).String(), true
}

// FilterStateProto implements accesslog.FilterStateObject: none.
func (Address) FilterStateProto() proto.Message { return nil }

// FilterStateField implements accesslog.FilterStateFielder: ip (a
// string) and port (a number).
func (a Address) FilterStateField(name string) (any, bool) {
	switch name {
	case "ip":
		return netip.AddrPort(a).Addr().String(), true
	case "port":
		return int64(netip.AddrPort(a).Port()), true
	}
	return nil, false
}

// StringAccessorOf is the string a value holds when it is a string
// object (Envoy's StringAccessor: String, HashableString, or a plain
// string a network filter kept); false for any other.
func StringAccessorOf(v any) (string, bool) {
	switch o := v.(type) {
	case string:
		return o, true
	case String:
		return string(o), true
	case HashableString:
		return string(o), true
	}
	return "", false
}

// StringOf is the string a filter state value stands for: a string, or
// an object's PLAIN form; false for a value without one.
func StringOf(v any) (string, bool) {
	switch o := v.(type) {
	case string:
		return o, true
	case interface{ FilterStateString() (string, bool) }:
		return o.FilterStateString()
	}
	return "", false
}
