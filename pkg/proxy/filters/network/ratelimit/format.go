package ratelimit

import (
	"net"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/ratelimitservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
)

// valueFormat is a descriptor entry's value with command operators
// (%DOWNSTREAM_REMOTE_ADDRESS%...), rendered for each connection as
// Envoy's applySubstitutionFormatter does: a missing value prints "-".
type valueFormat struct {
	// desc and entry locate the value in the filter's descriptors.
	desc, entry int
	format      *accesslog.Formatter
}

// request is the call's request for connection c: the fixed one when no
// value is formatted, else one with the values rendered from c.
func (f *Filter) request(c net.Conn) *rlsv3.RateLimitRequest {
	if len(f.formats) == 0 {
		return f.req
	}
	e := &accesslog.Entry{
		StartTime:               time.Now(),
		DownstreamRemoteAddress: accesslog.AddressString(c.RemoteAddr()),
		DownstreamLocalAddress:  accesslog.AddressString(c.LocalAddr()),
		RequestedServerName:     accesslog.RequestedServerName(c),
		TLS:                     tlsconfig.AccessLogInfo(c),
	}
	descs := make([]ratelimitservice.Descriptor, len(f.descs))
	for i, d := range f.descs {
		descs[i] = d // its limit override and hits stay
		descs[i].Entries = append([]router.DescriptorEntry(nil), d.Entries...)
	}
	for _, vf := range f.formats {
		descs[vf.desc].Entries[vf.entry].Value = string(vf.format.Append(nil, e))
	}
	return ratelimitservice.Request(f.domain, descs)
}
