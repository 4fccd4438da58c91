package httpfilter

import "github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"

// RequestEntry is what a format evaluated before the response (a rate
// limit entry's hits_addend) reads of the stream: the request, its
// connection, the body bytes received so far and the dynamic metadata.
// Response operators have no value.
func RequestEntry(s Stream) *accesslog.Entry {
	req, info := s.Request(), s.Info()
	return &accesslog.Entry{
		Method: req.Method, Path: req.Path, Authority: req.Host, Scheme: req.Scheme,
		Protocol:                info.Protocol,
		RequestHeaders:          s.RequestHeaders(),
		DownstreamRemoteAddress: info.RemoteAddress,
		DownstreamLocalAddress:  info.LocalAddress,
		RequestedServerName:     info.RequestedServerName,
		TLS:                     info.TLS,
		StartTime:               info.Start,
		BytesReceived:           info.BytesReceived,
		DynamicMetadata:         s.DynamicMetadata(),
	}
}
