// Package extauthz is the external authorization network filter
// (envoy.filters.network.ext_authz): before a connection's data flows to
// the next filter (tcp_proxy, the HTTP connection manager), it asks the
// gRPC authorization service (envoy.service.auth.v3.Authorization/Check)
// about the connection: its source and destination addresses and, on TLS,
// both principals, the client's certificate (include_peer_certificate)
// and the SNI (include_tls_session). Nothing of the connection is read
// until the answer comes or the grpc_service timeout (200ms by default)
// passes. A denial closes the connection; so does a failed check unless
// failure_mode_allow lets it through. With shadow_mode nothing is
// refused: the decision goes to the connection's filter state under
// envoy.filters.network.ext_authz (Envoy's ShadowDecision) for a later
// filter or the access log to read. The answer's dynamic_metadata goes
// to the connection's dynamic metadata under
// envoy.filters.network.ext_authz (with ext_authz_duration, the check's
// milliseconds, as Envoy adds), where tcp_proxy's access logs read it.
//
// Its stats are Envoy's, under ext_authz.<stat_prefix>.: total, ok,
// denied, error, failure_mode_allowed, disabled, cx_closed and the active
// gauge.
//
// As the network RBAC filter, the check is made once the listener hands
// the connection to its filter chain (after the TLS handshake), rather
// than when the first byte arrives as in Envoy: a denied connection then
// never reaches the upstream, even with a protocol where the server
// speaks first.
package extauthz

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	netextauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/ext_authz/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"github.com/go-logr/logr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	alfilter "github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/filter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/authzservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/listenerfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.network.ext_authz"

// MetadataNamespace is the namespace of the connection's dynamic metadata
// that the service's dynamic_metadata goes to (Envoy's filter name).
const MetadataNamespace = "envoy.filters.network.ext_authz"

// Envoy's close of a connection the check refuses: the
// UnauthorizedExternalService response flag and ext_authz_close.
var (
	refusalDenied = netfilter.Refusal{Flags: accesslog.UnauthorizedExternalService, Reason: "ext_authz_close"}
	// refusalGone is a connection that ended during the check: Envoy
	// cancels the call and closes nothing itself.
	refusalGone = netfilter.Refusal{}
)

// Factory compiles network ExtAuthz configurations.
type Factory struct{}

var _ netfilter.Factory = Factory{}

// Filter is a compiled network ExtAuthz; one value serves every
// connection.
type Filter struct {
	client *authzservice.Client
	// timeout bounds a check; 0 means none.
	timeout          time.Duration
	failureModeAllow bool
	includeCert      bool
	includeTLS       bool
	// enabledMetadata is filter_enabled_metadata, nil when unset: a
	// connection whose dynamic metadata does not match is not checked.
	enabledMetadata *alfilter.MetadataMatcher
	// destinationLabels are the node metadata's labels under
	// bootstrap_metadata_labels_key.
	destinationLabels map[string]string
	// metadataNamespaces are metadata_context_namespaces: the namespaces
	// of the connection's dynamic metadata sent in the metadata context.
	metadataNamespaces []string
	// shadowMode is shadow_mode: the decision goes to the connection's
	// filter state (ShadowStateKey) and the connection always goes on;
	// shadowDesc is the descriptor of the decision's TYPED form.
	shadowMode bool
	shadowDesc protoreflect.MessageDescriptor
	log        logr.Logger

	total, ok, denied, errors, failureModeAllowed, disabled, cxClosed *stats.Counter
	active                                                            *stats.Gauge
}

var (
	_ netfilter.DataFilter = (*Filter)(nil)
	_ io.Closer            = (*Filter)(nil)
)

// Close implements io.Closer: the service's channel, once the filter's
// connections are gone.
func (f *Filter) Close() error { return f.client.Close() }

// Compile implements netfilter.Factory. Errors name the field path below
// typed_config.
func (Factory) Compile(msg proto.Message, ctx netfilter.Context) (netfilter.Filter, error) {
	p, ok := msg.(*netextauthzv3.ExtAuthz)
	if !ok {
		return nil, fmt.Errorf("expected a %s, got %T", proto.MessageName(&netextauthzv3.ExtAuthz{}), msg)
	}
	if ctx.Stats == nil {
		return nil, errors.New("no stat store")
	}
	if err := refuseUnsupported(p); err != nil {
		return nil, err
	}
	switch {
	case p.GetStatPrefix() == "":
		return nil, errors.New("stat_prefix: must be set")
	case p.GetGrpcService() == nil:
		return nil, errors.New("grpc_service: must be set")
	}
	if err := authzservice.CheckTransportVersion(p.GetTransportApiVersion()); err != nil {
		return nil, err
	}
	if t := p.GetGrpcService().GetTimeout(); t != nil && (t.CheckValid() != nil || t.AsDuration() < 0) {
		return nil, errors.New("grpc_service.timeout: must be a valid, non-negative duration")
	}
	f := &Filter{
		failureModeAllow:   p.GetFailureModeAllow(),
		includeCert:        p.GetIncludePeerCertificate(),
		includeTLS:         p.GetIncludeTlsSession(),
		destinationLabels:  authzservice.NodeLabels(ctx.NodeMetadata, p.GetBootstrapMetadataLabelsKey()),
		metadataNamespaces: p.GetMetadataContextNamespaces(),
		shadowMode:         p.GetShadowMode(),
		log:                ctx.Log,
	}
	if f.shadowMode {
		d, err := shadowDecisionDescriptor()
		if err != nil {
			return nil, fmt.Errorf("shadow_mode: %w", err)
		}
		f.shadowDesc = d
	}
	if m := p.GetFilterEnabledMetadata(); m != nil {
		mm, err := alfilter.CompileMetadataMatcher(m)
		if err != nil {
			return nil, fmt.Errorf("filter_enabled_metadata.%w", err)
		}
		f.enabledMetadata = mm
	}
	var err error
	if f.client, f.timeout, err = authzservice.Open(p.GetGrpcService(), ctx.OpenGRPC, authzservice.DefaultTimeout); err != nil {
		return nil, fmt.Errorf("grpc_service.%w", err)
	}
	sc := ctx.Stats.Scope("ext_authz." + p.GetStatPrefix() + ".")
	f.total = sc.Counter("total")
	f.ok = sc.Counter("ok")
	f.denied = sc.Counter("denied")
	f.errors = sc.Counter("error")
	f.failureModeAllowed = sc.Counter("failure_mode_allowed")
	f.disabled = sc.Counter("disabled")
	f.cxClosed = sc.Counter("cx_closed")
	f.active = sc.Gauge("active")
	return f, nil
}

// refuseUnsupported refuses the fields Outrigger does not implement with
// their paths.
func refuseUnsupported(p *netextauthzv3.ExtAuthz) error {
	if p.GetSendTlsAlertOnDenial() {
		return errors.New("send_tls_alert_on_denial: only false is supported by Outrigger (Go's crypto/tls sends no alert of the application's choosing after the handshake)")
	}
	return nil
}

// OnData implements netfilter.DataFilter: after the TLS handshake, the
// service is asked about the connection, on the connection's goroutine;
// the connection goes on when it allows (or fails with
// failure_mode_allow) and is refused otherwise. A connection that ends
// during the check cancels it and, as in Envoy, counts nothing more than
// active going down.
func (f *Filter) OnData(c net.Conn) *netfilter.Refusal {
	if f.enabledMetadata != nil && !f.enabledMetadata.Match(netfilter.DynamicMetadataOf(c)) {
		f.disabled.Inc()
		return nil
	}
	f.active.Inc()
	f.total.Inc()
	start := time.Now()
	gone, cancel := context.WithCancel(context.Background())
	defer cancel()
	if fc, ok := c.(netfilter.Conn); ok {
		fc.OnClose(cancel)
	}
	stop := listenerfilter.WatchPeerClose(c, cancel)
	ctx := gone
	if f.timeout > 0 {
		var cancelT context.CancelFunc
		ctx, cancelT = context.WithTimeout(gone, f.timeout)
		defer cancelT()
	}
	resp, err := f.client.Check(ctx, f.checkRequest(c))
	stop()
	f.active.Dec()
	if err != nil && gone.Err() != nil {
		return &refusalGone
	}
	status := authzservice.Error
	if err == nil {
		status = authzservice.Outcome(resp)
	}
	switch status {
	case authzservice.OK:
		f.ok.Inc()
	case authzservice.Denied:
		f.denied.Inc()
	case authzservice.Error:
		f.errors.Inc()
	}
	if f.shadowMode {
		// As Envoy's: counted as usual, recorded, never enforced.
		f.recordShadow(c, status, resp)
	} else if status == authzservice.Denied || (status == authzservice.Error && !f.failureModeAllow) {
		if err != nil {
			f.log.V(1).Info("authorization check failed", "remote", accesslog.AddressString(c.RemoteAddr()), "error", err.Error())
		}
		f.cxClosed.Inc()
		return &refusalDenied
	}
	if status == authzservice.Error && !f.shadowMode {
		f.failureModeAllowed.Inc()
	}
	if md := authzservice.DynamicMetadata(resp); len(md.GetFields()) > 0 {
		f.setMetadata(c, md, time.Since(start))
	}
	return nil
}

// setMetadata adds the service's dynamic metadata to the connection's,
// with ext_authz_duration (the check's milliseconds) as Envoy adds it.
func (f *Filter) setMetadata(c net.Conn, md *structpb.Struct, took time.Duration) {
	fields := make(map[string]*structpb.Value, len(md.GetFields())+1)
	for k, v := range md.GetFields() {
		fields[k] = v
	}
	fields["ext_authz_duration"] = structpb.NewNumberValue(float64(took.Milliseconds()))
	netfilter.SetDynamicMetadata(c, MetadataNamespace, &structpb.Struct{Fields: fields})
}

// checkRequest is the CheckRequest of a connection as Envoy's
// CheckRequestUtils::createTcpCheck makes it: the peers' addresses and, on
// TLS, principals (see authzservice.SetTLSPeers), the destination's
// service being the requested server name and its labels the node's; the
// TLS session with include_tls_session; and, with
// metadata_context_namespaces, those namespaces of the connection's
// dynamic metadata.
func (f *Filter) checkRequest(c net.Conn) *authv3.CheckRequest {
	sni := accesslog.RequestedServerName(c)
	source := &authv3.AttributeContext_Peer{Address: authzservice.SocketAddress(accesslog.AddressString(c.RemoteAddr()))}
	dest := &authv3.AttributeContext_Peer{
		Address: authzservice.SocketAddress(accesslog.AddressString(c.LocalAddr())),
		Service: sni,
		Labels:  f.destinationLabels,
	}
	info := tlsconfig.AccessLogInfo(c)
	authzservice.SetTLSPeers(source, dest, info, f.includeCert)
	attrs := &authv3.AttributeContext{Source: source, Destination: dest}
	if f.includeTLS {
		attrs.TlsSession = authzservice.TLSSession(info, sni)
	}
	if len(f.metadataNamespaces) > 0 {
		attrs.MetadataContext = authzservice.PickNamespaces(netfilter.DynamicMetadataOf(c), f.metadataNamespaces)
	}
	return &authv3.CheckRequest{Attributes: attrs}
}
