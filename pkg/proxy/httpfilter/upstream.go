package httpfilter

import (
	"errors"
	"fmt"
	"io"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
)

// Upstream HTTP filters (Envoy's upstream filter chain): the router's
// upstream_http_filters, or a cluster's HttpProtocolOptions.http_filters,
// which take precedence. The chain runs once per upstream attempt, after
// the host is picked, on the request head as it goes upstream, and on the
// response head the attempt brings back; its last filter must be
// upstream_codec, which stands for sending the request. Only the filters
// Envoy lets run upstream and whose Factory says so (UpstreamCapable) may
// be in it.

// UpstreamCategory is the extension category of the filters that exist
// only in the upstream chain (upstream_codec).
const UpstreamCategory = "envoy.filters.http.upstream"

// downstreamCategory is the category of the HTTP filters, some of which
// may run upstream too.
const downstreamCategory = "envoy.filters.http"

// UpstreamCapable is implemented by the Factory of a filter that may run
// in an upstream chain as well (Envoy's dual filters). In an upstream
// chain each attempt gets filters of its own (NewFilter, once per
// attempt), which encode that attempt's response and are destroyed
// (Destroyer) when the attempt ends, however it ends: relayed, answered,
// failed, retried, timed out, a hedged attempt that lost, or the client
// gone. A filter edits the request and response heads through its
// Stream, may buffer the request body (BufferRequestBody: the attempt's
// copy, read again for each attempt) and may answer the request
// (SendLocalReply, then Stop: the attempt ends, its reply goes
// downstream and is not retried, as Envoy's upstream local replies). It
// never routes again (ClearRouteCache), transforms a body
// (TransformRequestBody, TransformResponseBody), replaces the request or
// the response, or waits (Wait, Sleep): an upstream attempt does not
// carry those here.
type UpstreamCapable interface {
	Factory
	// UpstreamCapable marks the factory.
	UpstreamCapable()
}

// ReplyEncoder is an upstream filter that edits the head of its own local
// reply (Envoy's modify_headers of sendLocalReply, which an upstream
// filter's reply carries downstream): the reply does not go through the
// upstream chain's encoders, only through this edit and the connection
// manager's filters.
type ReplyEncoder interface {
	// EncodeReplyHeaders edits s.ResponseHeaders of the filter's reply.
	EncodeReplyHeaders(s Stream)
}

// UpstreamCodec is implemented by the configuration of upstream_codec,
// the terminal filter of an upstream chain.
type UpstreamCodec interface {
	Config
	// IsUpstreamCodec reports true.
	IsUpstreamCodec() bool
}

// UpstreamFilter is one compiled filter of an upstream chain.
type UpstreamFilter struct {
	// Name is the filter's configured name, the key of its per-route
	// configuration.
	Name   string
	Config Config
}

// UpstreamChain is a compiled upstream filter chain: the filters before
// upstream_codec, in order.
type UpstreamChain struct {
	Filters []UpstreamFilter
}

// Close closes the chain's filter configurations that hold resources
// (those that implement io.Closer), once no request uses them; a nil
// chain has none.
func (c *UpstreamChain) Close() {
	if c == nil {
		return
	}
	for _, f := range c.Filters {
		if cl, ok := f.Config.(io.Closer); ok {
			_ = cl.Close()
		}
	}
}

// CompileUpstream compiles an upstream filter chain (field names the list
// in errors, "upstream_http_filters"); nil for an empty list, which means
// no upstream filter. The last filter must be upstream_codec, and only the
// last. Errors name the field path.
func CompileUpstream(field string, filters []*hcmv3.HttpFilter, ctx Context) (*UpstreamChain, error) {
	if len(filters) == 0 {
		return nil, nil
	}
	if ctx.Extensions == nil {
		return nil, fmt.Errorf("%s: no HTTP filter is registered", field)
	}
	chain := &UpstreamChain{}
	var errs []error
	for i, f := range filters {
		path := fmt.Sprintf("%s[%d]", field, i)
		last := i == len(filters)-1
		if f.GetDisabled() {
			errs = append(errs, fmt.Errorf("%s.disabled: not supported by Outrigger in an upstream filter chain", path))
			continue
		}
		if OptionalMissing(f, ctx.Extensions, ctx.LookupByName, UpstreamCategory, downstreamCategory) {
			logging.Warning(ctx.Log, "Didn't find a registered config factory for the optional http filter "+f.GetName(), "field", path)
			continue
		}
		factory, msg, err := resolveUpstream(f, ctx.Extensions, ctx.LookupByName)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.%w", path, err))
			continue
		}
		fctx := ctx
		fctx.Name = f.GetName()
		fctx.Upstream = true
		cfg, err := factory.Compile(msg, fctx)
		if errors.Is(err, ErrNoStats) && ctx.Stats == nil {
			// A cluster's chain: the filters that keep stats or call
			// services run only in the router's.
			errs = append(errs, fmt.Errorf("%s.typed_config: filter %q is not supported by Outrigger in a cluster's http_filters (only in the router's upstream_http_filters)", path, f.GetName()))
			continue
		}
		if err != nil {
			errs = append(errs, PrefixErrors(path+".typed_config.", err))
			continue
		}
		codec, _ := cfg.(UpstreamCodec)
		isCodec := codec != nil && codec.IsUpstreamCodec()
		switch {
		case isCodec && !last:
			errs = append(errs, fmt.Errorf("%s: upstream_codec is terminal and must be the last upstream filter", path))
		case !isCodec && last:
			errs = append(errs, fmt.Errorf("%s: the last upstream HTTP filter must be envoy.filters.http.upstream_codec", path))
		case !isCodec:
			chain.Filters = append(chain.Filters, UpstreamFilter{Name: f.GetName(), Config: cfg})
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return chain, nil
}

// resolveUpstream finds the factory of an upstream filter: upstream_codec
// (of the upstream category), or an HTTP filter whose factory may run
// upstream.
func resolveUpstream(f *hcmv3.HttpFilter, reg *extension.Registry, byName bool) (Factory, proto.Message, error) {
	if f.GetTypedConfig() == nil && f.GetConfigDiscovery() != nil {
		return nil, nil, errors.New("config_discovery: not supported by Outrigger")
	}
	ref := extension.Ref{Kind: "filter", Category: UpstreamCategory, Name: f.GetName(), Config: f.GetTypedConfig()}
	if ext, msg, err := reg.Resolve(ref, byName); err == nil {
		factory, ok := ext.Factory.(Factory)
		if !ok {
			return nil, nil, fmt.Errorf("typed_config: extension %q is not an HTTP filter", ext.Name)
		}
		return factory, msg, nil
	}
	ref.Category = downstreamCategory
	ext, msg, err := reg.Resolve(ref, byName)
	if err != nil {
		return nil, nil, err
	}
	factory, ok := ext.Factory.(UpstreamCapable)
	if !ok {
		return nil, nil, fmt.Errorf("typed_config: filter %q cannot run as an upstream HTTP filter in Outrigger (upstream filters: envoy.filters.http.buffer, envoy.filters.http.ext_proc, envoy.filters.http.header_mutation and envoy.filters.http.lua, then envoy.filters.http.upstream_codec)", ext.Name)
	}
	return factory, msg, nil
}
