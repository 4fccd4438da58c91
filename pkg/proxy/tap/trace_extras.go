package tap

import (
	"net"
	"strconv"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	datatapv3 "github.com/envoyproxy/go-control-plane/envoy/data/tap/v3"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Extras are what the tap HTTP filter's record_headers_received_time and
// record_downstream_connection add to a buffered trace (Envoy adds them
// to http_buffered_trace only, never to streamed segments).
type Extras struct {
	// RequestHeadersAt and ResponseHeadersAt are when each head came;
	// zero: not recorded.
	RequestHeadersAt, ResponseHeadersAt time.Time
	// Local and Remote are the downstream connection's addresses,
	// "ip:port"; empty: not recorded.
	Local, Remote string
}

// apply adds the extras to a buffered trace: a message's
// headers_received_time only when its headers were captured, the
// connection only when both addresses are known.
func (x *Extras) apply(bt *datatapv3.HttpBufferedTrace, haveRequest, haveResponse bool) {
	if !x.RequestHeadersAt.IsZero() && haveRequest {
		bt.Request.HeadersReceivedTime = timestamppb.New(x.RequestHeadersAt)
	}
	if !x.ResponseHeadersAt.IsZero() && haveResponse {
		bt.Response.HeadersReceivedTime = timestamppb.New(x.ResponseHeadersAt)
	}
	local, lok := socketAddress(x.Local)
	remote, rok := socketAddress(x.Remote)
	if lok && rok {
		bt.DownstreamConnection = &datatapv3.Connection{LocalAddress: local, RemoteAddress: remote}
	}
}

// socketAddress is "ip:port" as Envoy's addressToProtobufAddress renders
// an IP address.
func socketAddress(hostport string) (*corev3.Address, bool) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, false
	}
	p, err := strconv.ParseUint(port, 10, 32)
	if err != nil {
		return nil, false
	}
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address: host, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(p)},
	}}}, true
}
