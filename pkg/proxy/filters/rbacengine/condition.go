package rbacengine

import (
	"errors"
	"fmt"
	"net/netip"

	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/cel"
)

// compileCondition compiles a policy's condition (a parsed CEL
// expression) or checked_condition (a checked one); Envoy takes one of
// them. The policy's cel_config chooses the CEL features beyond Envoy's
// defaults; envs keeps an environment per choice.
func compileCondition(p *rbacv3.Policy, envs map[cel.Options]*cel.Env) (*cel.Program, error) {
	if p.GetCondition() != nil && p.GetCheckedCondition() != nil {
		return nil, errors.New("checked_condition: only one of condition and checked_condition may be set")
	}
	opts := cel.OptionsOf(p.GetCelConfig())
	env := envs[opts]
	if env == nil {
		e, err := cel.NewEnvWith(opts)
		if err != nil {
			return nil, fmt.Errorf("condition: %w", err)
		}
		env, envs[opts] = e, e
	}
	if c := p.GetCondition(); c != nil {
		prg, err := env.CompileParsed(c)
		if err != nil {
			return nil, fmt.Errorf("condition: %w", err)
		}
		return prg, nil
	}
	prg, err := env.CompileChecked(p.GetCheckedCondition())
	if err != nil {
		return nil, fmt.Errorf("checked_condition: %w", err)
	}
	return prg, nil
}

// celState is what conditions read of an Input, made at the first
// condition of an evaluation.
type celState struct {
	ready bool
	act   cel.Activation
	req   cel.Request
	conn  cel.Connection
	xds   cel.XDS
}

// celActivation is the input's attributes for conditions: the request
// head, the addresses, the connection's TLS peer, the route's and the
// request's metadata.
func (in *Input) celActivation() *cel.Activation {
	st := &in.cel
	if st.ready {
		return &st.act
	}
	st.ready = true
	st.act = cel.Activation{Metadata: in.Metadata, Destination: in.Local}
	if r := in.Request; r != nil {
		st.req = cel.Request{Headers: r.Headers, Path: r.Path, Host: r.Host, Scheme: r.Scheme, Method: r.Method}
		st.act.Request = &st.req
	}
	// source is the downstream client as the connection manager sees it;
	// its port is the connection's when that is the client.
	if in.Remote.IsValid() {
		var port uint16
		if in.Remote == in.Source {
			port = in.SourcePort
		}
		st.act.Source = netip.AddrPortFrom(in.Remote, port)
	}
	st.conn = cel.Connection{TLS: in.TLS, RequestedServerName: in.ServerName}
	if p := in.Peer; p != nil {
		st.conn.MTLS, st.conn.PeerSubject = true, p.Subject
		if len(p.URIs) > 0 {
			st.conn.PeerURISAN = p.URIs[0]
		}
		if len(p.DNSNames) > 0 {
			st.conn.PeerDNSSAN = p.DNSNames[0]
		}
	}
	st.act.Connection = &st.conn
	if in.HasRoute {
		st.xds = cel.XDS{RouteMetadata: in.RouteMetadata}
		st.act.XDS = &st.xds
	}
	return &st.act
}
