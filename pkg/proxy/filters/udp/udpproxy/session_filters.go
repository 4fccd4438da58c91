package udpproxy

import (
	"errors"
	"fmt"

	udpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/udp/udp_proxy/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/udpfilter"
)

// compileSessionFilters compiles session_filters: each is a session
// filter extension (envoy.filters.udp.session) found by the type of its
// typed_config, or by its name. Errors name the field path.
func compileSessionFilters(ctx udpfilter.Context, fs []*udpproxyv3.UdpProxyConfig_SessionFilter) ([]udpfilter.SessionFilterConfig, error) {
	var (
		out  []udpfilter.SessionFilterConfig
		errs []error
	)
	for i, f := range fs {
		path := fmt.Sprintf("session_filters[%d]", i)
		if f.GetConfigDiscovery() != nil {
			errs = append(errs, fmt.Errorf("%s.config_discovery: not supported by Outrigger (session filters are configured inline)", path))
			continue
		}
		ext, msg, err := ctx.Extensions.Resolve(extension.Ref{
			Kind: "UDP session filter", Category: udpfilter.SessionCategory, Name: f.GetName(), Config: f.GetTypedConfig(),
		}, ctx.LookupByName)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.%w", path, err))
			continue
		}
		factory, ok := ext.Factory.(udpfilter.SessionFactory)
		if !ok {
			errs = append(errs, fmt.Errorf("%s.typed_config: UDP session filter %s is not supported by Outrigger", path, ext.Name))
			continue
		}
		c, err := factory.CompileSession(msg)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.typed_config.%w", path, err))
			continue
		}
		out = append(out, c)
	}
	return out, errors.Join(errs...)
}

// newSessionFilters makes a session's filters, nil without any.
func (p *Proxy) newSessionFilters() []udpfilter.SessionFilter {
	if len(p.cfg.sessionFilters) == 0 {
		return nil
	}
	fs := make([]udpfilter.SessionFilter, len(p.cfg.sessionFilters))
	for i, c := range p.cfg.sessionFilters {
		fs[i] = c.NewSessionFilter()
	}
	return fs
}

// filterDown runs a client's datagram through the session's read filters,
// in order; ok is false when one drops it.
func (s *session) filterDown(b []byte) ([]byte, bool) {
	for _, f := range s.filters {
		var ok bool
		if b, ok = f.OnData(b); !ok {
			return nil, false
		}
	}
	return b, true
}

// filterUp runs a host's datagram through the session's write filters,
// last first, and returns the datagrams for the client.
func (s *session) filterUp(b []byte) [][]byte {
	ds := [][]byte{b}
	for i := len(s.filters) - 1; i >= 0 && len(ds) > 0; i-- {
		var next [][]byte
		for _, d := range ds {
			next = append(next, s.filters[i].OnWrite(d)...)
		}
		ds = next
	}
	return ds
}
