package listener

import (
	"errors"
	"fmt"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpmatch"
)

// chainAction is a filter_chain_matcher's action: the chain a
// google.protobuf.StringValue names, or, for Envoy's format_string action
// (envoy.matching.actions.format_string, a SubstitutionFormatString), the
// chain whose name the format renders for each connection.
type chainAction struct {
	chain  *chain
	format *accesslog.Formatter
	byName map[string]*chain
}

// compileChainAction compiles an action over the chains by name. Envoy
// accepts a name no chain has and finds no chain for the connections it
// selects.
func compileChainAction(tc *xdscorev3.TypedExtensionConfig, path string, byName map[string]*chain) (*chainAction, error) {
	msg, err := httpmatch.TypedConfig(tc, path, "an action")
	if err != nil {
		return nil, err
	}
	switch a := msg.(type) {
	case *wrapperspb.StringValue:
		return &chainAction{chain: byName[a.GetValue()]}, nil
	case *corev3.SubstitutionFormatString:
		if len(a.GetFormatters()) > 0 {
			return nil, errors.New(path + ".typed_config.formatters: formatter extensions are not available in a filter chain matcher's format")
		}
		f, err := accesslog.CompileSubstitution(a, nil)
		if err != nil {
			return nil, fmt.Errorf("%s.typed_config.%w", path, err)
		}
		return &chainAction{format: f, byName: byName}, nil
	}
	return nil, fmt.Errorf("%s.typed_config: a filter chain matcher's action is a google.protobuf.StringValue or an envoy.config.core.v3.SubstitutionFormatString naming a filter chain, not %s", path, proto.MessageName(msg))
}

// resolve is the action's chain for the connection d, nil for none.
func (a *chainAction) resolve(d *connData) *chain {
	if a.format == nil {
		return a.chain
	}
	// What the connection knows when its chain is chosen: its addresses
	// and the server name the listener filters found.
	e := accesslog.Entry{
		DownstreamLocalAddress:  d.local.String(),
		DownstreamRemoteAddress: d.remote.String(),
		RequestedServerName:     d.det.sni,
	}
	return a.byName[string(a.format.Append(nil, &e))]
}
