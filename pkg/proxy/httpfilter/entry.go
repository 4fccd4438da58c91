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

// EntryReader is implemented by a Stream that can show a filter its
// access-log entry as it stands, for % operators rendered while the stream
// runs (header_mutation's values): the request, its connection, the
// dynamic metadata and filter state recorded so far, and the response's
// status, flags and sizes once known. Response headers appear there only
// once the response has left; a filter that renders during EncodeHeaders
// points a copy at the headers it is given.
type EntryReader interface {
	// LogEntry returns the stream's entry brought up to date. The caller
	// reads it during its call only and does not change it.
	LogEntry() *accesslog.Entry
}

// CurrentEntry is s's access-log entry when the stream offers it
// (EntryReader), else the request-only entry of RequestEntry.
func CurrentEntry(s Stream) *accesslog.Entry {
	if r, ok := s.(EntryReader); ok {
		return r.LogEntry()
	}
	return RequestEntry(s)
}
