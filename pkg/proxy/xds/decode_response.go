package xds

import (
	"strconv"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/bootstrap"
)

// decodeResponse decodes a gRPC response's resources straight from their
// Any values, each once, with the checks decodeBytes makes of the wire
// form (unknown fields under the policy, typed_config values). ok is
// false when the response needs decodeBytes: it has a problem (which
// decodeBytes reports in its own words), resources of another type or
// wrapped in a Resource, or fields beyond the version, the type, the
// nonce and the resources. Either way the update is the same.
func (d *decoder) decodeResponse(resp *discoveryv3.DiscoveryResponse, allowUnknown bool) (u Update, unknown []string, ok bool) {
	switch {
	case len(resp.ProtoReflect().GetUnknown()) > 0, resp.GetControlPlane() != nil, len(resp.GetResourceErrors()) > 0:
		return Update{}, nil, false
	case resp.GetTypeUrl() != "" && resp.GetTypeUrl() != d.typeURL:
		return Update{}, nil, false
	case len(resp.GetResources()) == 0 && resp.GetVersionInfo() == "" && resp.GetNonce() == "" && resp.GetTypeUrl() == "" && !resp.GetCanary():
		// Nothing at all: decodeBytes refuses an empty response.
		return Update{}, nil, false
	}
	dec := bootstrap.Decoder{AllowUnknown: allowUnknown, Types: d.types.resolver}
	if d.endpoints != nil {
		d.endpoints.begin()
		defer d.endpoints.end()
	}
	if d.whole != nil {
		d.whole.begin()
		defer d.whole.end()
	}
	u = Update{VersionInfo: resp.GetVersionInfo()}
	if n := len(resp.GetResources()); n > 0 {
		u.Resources = make([]proto.Message, 0, n)
	}
	for i, a := range resp.GetResources() {
		path, depth, wrapper := "resources["+strconv.Itoa(i)+"]", 2, (*discoveryv3.Resource)(nil)
		if a.GetTypeUrl() == wrapperTypeURL {
			// The delta protocol's resources come wrapped.
			if wrapper = plainWrapper(a.GetValue()); wrapper == nil {
				return Update{}, nil, false
			}
			a, path, depth = wrapper.GetResource(), childPath(path, "resource"), 4
		}
		if a.GetTypeUrl() != d.typeURL || len(a.ProtoReflect().GetUnknown()) > 0 {
			return Update{}, nil, false
		}
		// The depth is the resource's in the response, as decodeBytes
		// meets it: the response, the Any, (the wrapper, its Any,) the
		// resource.
		m, un, err := d.decodeResource(dec, path, depth, a.GetValue())
		if err != nil {
			return Update{}, nil, false
		}
		if name := wrapper.GetName(); name != "" {
			if own, ok := resourceNameOf(m); ok && own != name {
				return Update{}, nil, false
			}
		}
		unknown = append(unknown, un...)
		u.Resources = append(u.Resources, m)
	}
	return u, unknown, true
}

// wrapperTypeURL is the type of the Resource wrapper.
const wrapperTypeURL = "type.googleapis.com/" + string(resourceName)

// plainWrapper decodes a Resource wrapper that has nothing to check but
// its name, version, aliases and resource; nil for any other.
func plainWrapper(value []byte) *discoveryv3.Resource {
	w := new(discoveryv3.Resource)
	if err := proto.Unmarshal(value, w); err != nil {
		return nil
	}
	if len(w.ProtoReflect().GetUnknown()) > 0 || w.GetResource() == nil || w.GetResourceName() != nil ||
		w.GetTtl() != nil || w.GetCacheControl() != nil || w.GetMetadata() != nil {
		return nil
	}
	return w
}

// decodeResource decodes one resource's wire form at path and depth: a
// large load assignment by parts when it is plain, anything else whole.
func (d *decoder) decodeResource(dec bootstrap.Decoder, path string, depth int, value []byte) (proto.Message, []string, error) {
	if d.endpoints != nil {
		if cla, ok := d.endpoints.decode(dec, depth, value); ok {
			return cla, nil, nil
		}
	}
	if d.whole != nil {
		if m, ok := d.whole.lookup(value); ok {
			return m, nil, nil
		}
	}
	m := d.resourceType.New().Interface()
	unknown, err := dec.DecodeWire(path, depth, value, m)
	if err == nil && len(unknown) == 0 && d.whole != nil {
		d.whole.keep(value, m)
	}
	return m, unknown, err
}
