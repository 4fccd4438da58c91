package extauthz

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	netextauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/ext_authz/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice/grpcservicetest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

// authz is an authorization service that answers with code (and
// metadata) and keeps the requests it got; hold, when set, keeps each
// call waiting until the caller gives up.
type authz struct {
	authv3.UnimplementedAuthorizationServer
	code     codes.Code
	metadata *structpb.Struct
	hold     bool

	mu   sync.Mutex
	reqs []*authv3.CheckRequest
}

func (a *authz) Check(ctx context.Context, req *authv3.CheckRequest) (*authv3.CheckResponse, error) {
	a.mu.Lock()
	a.reqs = append(a.reqs, req)
	a.mu.Unlock()
	if a.hold {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &authv3.CheckResponse{Status: &status.Status{Code: int32(a.code)}, DynamicMetadata: a.metadata}, nil
}

func (a *authz) last(t *testing.T) *authv3.CheckRequest {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.reqs) == 0 {
		t.Fatal("the service got no request")
	}
	return a.reqs[len(a.reqs)-1]
}

// serve starts a gRPC server of a on loopback and returns its address.
func serve(t *testing.T, a *authz) string {
	t.Helper()
	return grpcservicetest.Serve(t, func(srv *grpc.Server) { authv3.RegisterAuthorizationServer(srv, a) })
}

// build compiles a network ExtAuthz given as JSON; SERVICE in js stands
// for a grpc_service reaching target.
func build(t *testing.T, js, target string, node *structpb.Struct) (*Filter, *stats.Store, error) {
	t.Helper()
	js = strings.ReplaceAll(js, "SERVICE", `"grpc_service": {"google_grpc": {"target_uri": "`+target+`", "stat_prefix": "authz"}, "timeout": "5s"}`)
	p := &netextauthzv3.ExtAuthz{}
	if err := protojson.Unmarshal([]byte(js), p); err != nil {
		t.Fatal(err)
	}
	store := stats.NewStore()
	f, err := Factory{}.Compile(p, netfilter.Context{Stats: store, NodeMetadata: node, OpenGRPC: func(gs *corev3.GrpcService) (*grpcservice.Channel, error) {
		return grpcservice.Open(gs, grpcservice.Context{})
	}})
	if err != nil {
		return nil, nil, err
	}
	t.Cleanup(func() { _ = f.(*Filter).Close() })
	return f.(*Filter), store, nil
}

// conn is a downstream connection as the listener hands it over: its
// addresses, TLS state, SNI and dynamic metadata.
type conn struct {
	net.Conn
	remote, local net.Addr
	tls           *tls.ConnectionState
	localCert     *x509.Certificate
	sni           string
	md            *corev3.Metadata
	netfilter.ConnState

	mu     sync.Mutex
	closed []func()
}

func (c *conn) RemoteAddr() net.Addr { return c.remote }
func (c *conn) LocalAddr() net.Addr  { return c.local }
func (c *conn) OnClose(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = append(c.closed, f)
}
func (c *conn) TLSConnectionState() (tls.ConnectionState, bool) {
	if c.tls == nil {
		return tls.ConnectionState{}, false
	}
	return *c.tls, true
}
func (c *conn) TLSLocalCertificate() *x509.Certificate { return c.localCert }
func (c *conn) RequestedServerName() string            { return c.sni }
func (c *conn) DynamicMetadata() *corev3.Metadata      { return c.md }
func (c *conn) SetDynamicMetadata(ns string, f *structpb.Struct) {
	c.md = accesslog.MergeMetadata(c.md, ns, f)
}

func plainConn() *conn {
	return &conn{
		remote: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 5555},
		local:  &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080},
	}
}

// counters reads the filter's stats.
func counters(store *stats.Store) map[string]uint64 {
	out := map[string]uint64{}
	for _, n := range []string{"total", "ok", "denied", "error", "failure_mode_allowed", "disabled", "cx_closed"} {
		if v := store.Counter("ext_authz.tcp." + n).Value(); v > 0 {
			out[n] = v
		}
	}
	if v := store.Gauge("ext_authz.tcp.active").Value(); v != 0 {
		out["active"] = uint64(v)
	}
	return out
}

func TestCompileRefuses(t *testing.T) {
	tests := map[string]struct{ config, want string }{
		"no stat_prefix":       {`{SERVICE}`, "stat_prefix: must be set"},
		"no grpc_service":      {`{"stat_prefix": "tcp"}`, "grpc_service: must be set"},
		"V2 transport":         {`{"stat_prefix": "tcp", SERVICE, "transport_api_version": "V2"}`, "transport_api_version: V2 is not supported"},
		"TLS alert":            {`{"stat_prefix": "tcp", SERVICE, "send_tls_alert_on_denial": true}`, "send_tls_alert_on_denial: only false"},
		"bad metadata matcher": {`{"stat_prefix": "tcp", SERVICE, "filter_enabled_metadata": {"filter": "f", "path": [{"key": "k"}]}}`, "filter_enabled_metadata."},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, _, err := build(t, tc.config, "127.0.0.1:1", nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Compile = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestCompileWithoutGRPC checks that a server that reaches no gRPC
// service refuses the filter at grpc_service.
func TestCompileWithoutGRPC(t *testing.T) {
	p := &netextauthzv3.ExtAuthz{StatPrefix: "tcp", GrpcService: &corev3.GrpcService{}}
	_, err := Factory{}.Compile(p, netfilter.Context{Stats: stats.NewStore()})
	if err == nil || !strings.HasPrefix(err.Error(), "grpc_service.") {
		t.Errorf("Compile = %v, want a grpc_service error", err)
	}
}

// TestDecisions checks each answer's effect on the connection and the
// stats.
func TestDecisions(t *testing.T) {
	tests := map[string]struct {
		code        codes.Code
		failOpen    bool
		serviceDown bool
		refused     bool
		want        map[string]uint64
	}{
		"allowed":                 {code: codes.OK, want: map[string]uint64{"total": 1, "ok": 1}},
		"denied":                  {code: codes.PermissionDenied, refused: true, want: map[string]uint64{"total": 1, "denied": 1, "cx_closed": 1}},
		"denied, failing open":    {code: codes.PermissionDenied, failOpen: true, refused: true, want: map[string]uint64{"total": 1, "denied": 1, "cx_closed": 1}},
		"service down":            {serviceDown: true, refused: true, want: map[string]uint64{"total": 1, "error": 1, "cx_closed": 1}},
		"service down, fail open": {serviceDown: true, failOpen: true, want: map[string]uint64{"total": 1, "error": 1, "failure_mode_allowed": 1}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			target := "127.0.0.1:1"
			if !tc.serviceDown {
				target = serve(t, &authz{code: tc.code})
			} else {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				target = ln.Addr().String()
				_ = ln.Close()
			}
			cfg := `{"stat_prefix": "tcp", SERVICE}`
			if tc.failOpen {
				cfg = `{"stat_prefix": "tcp", "failure_mode_allow": true, SERVICE}`
			}
			f, store, err := build(t, cfg, target, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := f.OnData(plainConn())
			if (r != nil) != tc.refused {
				t.Fatalf("refusal = %+v, want refused %v", r, tc.refused)
			}
			if r != nil && (r.Reason != "ext_authz_close" || r.Flags != accesslog.UnauthorizedExternalService) {
				t.Errorf("refusal = %+v, want ext_authz_close with UAEX", r)
			}
			if got := counters(store); !equal(got, tc.want) {
				t.Errorf("stats = %v, want %v", got, tc.want)
			}
		})
	}
}

func equal(a, b map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestTimeout checks that grpc_service's timeout ends a check the service
// does not answer: an error, refused without failure_mode_allow.
func TestTimeout(t *testing.T) {
	target := serve(t, &authz{hold: true})
	f, store, err := build(t, `{"stat_prefix": "tcp", SERVICE}`, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.timeout = 50 * time.Millisecond
	if r := f.OnData(plainConn()); r == nil || r.Reason != "ext_authz_close" {
		t.Errorf("refusal = %+v, want ext_authz_close", r)
	}
	if got, want := counters(store), map[string]uint64{"total": 1, "error": 1, "cx_closed": 1}; !equal(got, want) {
		t.Errorf("stats = %v, want %v", got, want)
	}
}

// TestConnectionGone checks that a connection closed during the check
// cancels it and counts nothing but total.
func TestConnectionGone(t *testing.T) {
	a := &authz{hold: true}
	target := serve(t, a)
	f, store, err := build(t, `{"stat_prefix": "tcp", SERVICE}`, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := plainConn()
	go func() {
		// Close the connection once the service has the call.
		for {
			a.mu.Lock()
			n := len(a.reqs)
			a.mu.Unlock()
			if n > 0 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		c.mu.Lock()
		hooks := c.closed
		c.mu.Unlock()
		for _, h := range hooks {
			h()
		}
	}()
	r := f.OnData(c)
	if r == nil || r.Reason != "" || r.Flags != 0 {
		t.Errorf("refusal = %+v, want a bare one", r)
	}
	if got, want := counters(store), map[string]uint64{"total": 1}; !equal(got, want) {
		t.Errorf("stats = %v, want %v", got, want)
	}
}

// TestCheckRequest checks what the service is told of a TLS connection:
// both peers with their principals, the client's certificate, the SNI,
// the node's labels and the metadata context.
func TestCheckRequest(t *testing.T) {
	_, leaves := tlstest.Leaves(t,
		tlstest.Options{CommonName: "client", URIs: []string{"spiffe://example.org/client"}, Client: true},
		tlstest.Options{DNS: []string{"backend.example.org"}})
	client, server := leaves[0], leaves[1]
	a := &authz{code: codes.OK}
	target := serve(t, a)
	node, _ := structpb.NewStruct(map[string]any{"labels": map[string]any{"app": "db"}})
	f, _, err := build(t, `{"stat_prefix": "tcp", SERVICE, "include_peer_certificate": true, "include_tls_session": true,
		"bootstrap_metadata_labels_key": "labels", "metadata_context_namespaces": ["ns", "absent"]}`, target, node)
	if err != nil {
		t.Fatal(err)
	}
	c := plainConn()
	c.tls = &tls.ConnectionState{ServerName: "db.example.org", PeerCertificates: []*x509.Certificate{client.Cert}}
	c.localCert = server.Cert
	c.sni = "db.example.org"
	c.md = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"ns": {Fields: map[string]*structpb.Value{"k": structpb.NewStringValue("v")}}}}
	if r := f.OnData(c); r != nil {
		t.Fatalf("refused: %+v", r)
	}
	attrs := a.last(t).GetAttributes()
	src, dst := attrs.GetSource(), attrs.GetDestination()
	if got := src.GetAddress().GetSocketAddress(); got.GetAddress() != "10.0.0.1" || got.GetPortValue() != 5555 {
		t.Errorf("source address = %v", got)
	}
	if got := dst.GetAddress().GetSocketAddress(); got.GetAddress() != "127.0.0.1" || got.GetPortValue() != 8080 {
		t.Errorf("destination address = %v", got)
	}
	if src.GetPrincipal() != "spiffe://example.org/client" {
		t.Errorf("source principal = %q, want the URI SAN", src.GetPrincipal())
	}
	if dst.GetPrincipal() != "backend.example.org" {
		t.Errorf("destination principal = %q, want the DNS SAN", dst.GetPrincipal())
	}
	pemText, err := url.QueryUnescape(src.GetCertificate())
	if err != nil || pemText != string(client.CertPEM) {
		t.Errorf("source certificate = %q (%v), want the client's URL-encoded PEM", src.GetCertificate(), err)
	}
	if dst.GetService() != "db.example.org" || dst.GetLabels()["app"] != "db" {
		t.Errorf("destination service %q labels %v", dst.GetService(), dst.GetLabels())
	}
	if attrs.GetTlsSession().GetSni() != "db.example.org" {
		t.Errorf("tls_session = %v", attrs.GetTlsSession())
	}
	if md := attrs.GetMetadataContext().GetFilterMetadata(); len(md) != 1 || md["ns"].GetFields()["k"].GetStringValue() != "v" {
		t.Errorf("metadata context = %v", md)
	}
}

// TestPlainCheckRequest checks that a plaintext connection has no
// principals, certificate or TLS session, even when asked for.
func TestPlainCheckRequest(t *testing.T) {
	a := &authz{code: codes.OK}
	f, _, err := build(t, `{"stat_prefix": "tcp", SERVICE, "include_peer_certificate": true, "include_tls_session": true}`, serve(t, a), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := f.OnData(plainConn()); r != nil {
		t.Fatalf("refused: %+v", r)
	}
	attrs := a.last(t).GetAttributes()
	if attrs.GetSource().GetPrincipal() != "" || attrs.GetSource().GetCertificate() != "" || attrs.TlsSession != nil || attrs.MetadataContext != nil {
		t.Errorf("attributes = %v", attrs)
	}
}

// TestSubjectPrincipal checks that a certificate without SANs is named
// by its subject.
func TestSubjectPrincipal(t *testing.T) {
	_, leaves := tlstest.Leaves(t, tlstest.Options{CommonName: "plain client", Client: true})
	leaf := leaves[0]
	a := &authz{code: codes.OK}
	f, _, err := build(t, `{"stat_prefix": "tcp", SERVICE}`, serve(t, a), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := plainConn()
	leaf.Cert.DNSNames = nil
	c.tls = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf.Cert}}
	if r := f.OnData(c); r != nil {
		t.Fatalf("refused: %+v", r)
	}
	src := a.last(t).GetAttributes().GetSource()
	if src.GetPrincipal() != leaf.Cert.Subject.String() || src.GetCertificate() != "" {
		t.Errorf("source = %v, want the subject %q and no certificate", src, leaf.Cert.Subject.String())
	}
}

// TestDynamicMetadata checks that an allowing answer's dynamic metadata
// goes to the connection's, under the filter's namespace, with
// ext_authz_duration.
func TestDynamicMetadata(t *testing.T) {
	md, _ := structpb.NewStruct(map[string]any{"user": "alice"})
	f, _, err := build(t, `{"stat_prefix": "tcp", SERVICE}`, serve(t, &authz{code: codes.OK, metadata: md}), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := plainConn()
	if r := f.OnData(c); r != nil {
		t.Fatalf("refused: %+v", r)
	}
	fields := c.md.GetFilterMetadata()[MetadataNamespace].GetFields()
	if fields["user"].GetStringValue() != "alice" {
		t.Errorf("metadata = %v", c.md)
	}
	if _, ok := fields["ext_authz_duration"].GetKind().(*structpb.Value_NumberValue); !ok {
		t.Errorf("ext_authz_duration = %v, want a number", fields["ext_authz_duration"])
	}

	// Without metadata in the answer, the connection gets none.
	f, _, err = build(t, `{"stat_prefix": "tcp", SERVICE}`, serve(t, &authz{code: codes.OK}), nil)
	if err != nil {
		t.Fatal(err)
	}
	c = plainConn()
	if r := f.OnData(c); r != nil || c.md != nil {
		t.Errorf("refusal %+v, metadata %v", r, c.md)
	}
}

// TestFilterEnabledMetadata checks that a connection whose dynamic
// metadata does not match filter_enabled_metadata is not checked.
func TestFilterEnabledMetadata(t *testing.T) {
	a := &authz{code: codes.PermissionDenied}
	f, store, err := build(t, `{"stat_prefix": "tcp", SERVICE,
		"filter_enabled_metadata": {"filter": "gate", "path": [{"key": "check"}], "value": {"bool_match": true}}}`, serve(t, a), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := f.OnData(plainConn()); r != nil {
		t.Errorf("an unmatched connection was refused: %+v", r)
	}
	if got, want := counters(store), map[string]uint64{"disabled": 1}; !equal(got, want) {
		t.Errorf("stats = %v, want %v", got, want)
	}
	c := plainConn()
	c.md = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"gate": {Fields: map[string]*structpb.Value{"check": structpb.NewBoolValue(true)}}}}
	if r := f.OnData(c); r == nil {
		t.Error("a matched connection was not checked")
	}
	if got, want := counters(store), map[string]uint64{"disabled": 1, "total": 1, "denied": 1, "cx_closed": 1}; !equal(got, want) {
		t.Errorf("stats = %v, want %v", got, want)
	}
}

// TestShadowMode checks that with shadow_mode every decision is counted
// and recorded in the connection's filter state, and none refuses the
// connection: Envoy's ShadowDecision with the denial's status.
func TestShadowMode(t *testing.T) {
	tests := map[string]struct {
		code        codes.Code
		serviceDown bool
		want        map[string]uint64
		plain       string
		typed       string
		field       any
	}{
		"allowed": {code: codes.OK, want: map[string]uint64{"total": 1, "ok": 1},
			plain: `{"check_result":"OK"}`, typed: `{"checkResult":"OK"}`, field: "OK"},
		"denied": {code: codes.PermissionDenied, want: map[string]uint64{"total": 1, "denied": 1},
			plain: `{"check_result":"DENIED","status_code":403}`, typed: `{"checkResult":"DENIED","statusCode":403}`, field: "DENIED"},
		"service down": {serviceDown: true, want: map[string]uint64{"total": 1, "error": 1},
			plain: `{"check_result":"ERROR"}`, typed: `{"checkResult":"ERROR"}`, field: "ERROR"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			target := "127.0.0.1:1"
			if !tc.serviceDown {
				target = serve(t, &authz{code: tc.code})
			}
			f, store, err := build(t, `{"stat_prefix": "tcp", "shadow_mode": true, SERVICE}`, target, nil)
			if err != nil {
				t.Fatal(err)
			}
			c := plainConn()
			if r := f.OnData(c); r != nil {
				t.Fatalf("refusal = %+v, want none in shadow mode", r)
			}
			if got := counters(store); !equal(got, tc.want) {
				t.Errorf("stats = %v, want %v", got, tc.want)
			}
			v, ok := c.FilterState(ShadowStateKey)
			if !ok {
				t.Fatal("no decision in the filter state")
			}
			obj := v.(accesslog.FilterStateObject)
			if s, _ := obj.FilterStateString(); s != tc.plain {
				t.Errorf("PLAIN = %s, want %s", s, tc.plain)
			}
			raw, err := protojson.Marshal(obj.FilterStateProto())
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.ReplaceAll(string(raw), " ", ""); got != tc.typed {
				t.Errorf("TYPED = %s, want %s", got, tc.typed)
			}
			if got, _ := obj.(accesslog.FilterStateFielder).FilterStateField("check_result"); got != tc.field {
				t.Errorf("check_result = %v, want %v", got, tc.field)
			}
		})
	}
}
