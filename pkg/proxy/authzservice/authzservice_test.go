package authzservice

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

func TestOutcome(t *testing.T) {
	tests := map[string]struct {
		resp *authv3.CheckResponse
		want Status
	}{
		"OK":                    {&authv3.CheckResponse{Status: &status.Status{Code: int32(codes.OK)}}, OK},
		"no status is OK":       {&authv3.CheckResponse{}, OK},
		"permission denied":     {&authv3.CheckResponse{Status: &status.Status{Code: int32(codes.PermissionDenied)}}, Denied},
		"unavailable, no error": {&authv3.CheckResponse{Status: &status.Status{Code: int32(codes.Unavailable)}}, Denied},
		"error_response": {&authv3.CheckResponse{Status: &status.Status{Code: int32(codes.Unavailable)},
			HttpResponse: &authv3.CheckResponse_ErrorResponse{ErrorResponse: &authv3.DeniedHttpResponse{}}}, Error},
	}
	for name, tc := range tests {
		if got := Outcome(tc.resp); got != tc.want {
			t.Errorf("%s: Outcome = %d, want %d", name, got, tc.want)
		}
	}
}

func TestDynamicMetadata(t *testing.T) {
	own, _ := structpb.NewStruct(map[string]any{"a": "own"})
	old, _ := structpb.NewStruct(map[string]any{"a": "deprecated"})
	okResp := &authv3.OkHttpResponse{}
	//lint:ignore SA1019 the deprecated field Envoy still reads is under test
	okResp.DynamicMetadata = old
	ok := &authv3.CheckResponse{DynamicMetadata: own, HttpResponse: &authv3.CheckResponse_OkResponse{OkResponse: okResp}}
	if got := DynamicMetadata(ok).GetFields()["a"].GetStringValue(); got != "deprecated" {
		t.Errorf("an allowing answer's metadata = %q, want the deprecated field's", got)
	}
	denied := &authv3.CheckResponse{Status: &status.Status{Code: int32(codes.PermissionDenied)}, DynamicMetadata: own}
	if got := DynamicMetadata(denied).GetFields()["a"].GetStringValue(); got != "own" {
		t.Errorf("a denial's metadata = %q, want its own", got)
	}
	if DynamicMetadata(&authv3.CheckResponse{}) != nil {
		t.Error("metadata out of nothing")
	}
}

func TestCheckTransportVersion(t *testing.T) {
	//lint:ignore SA1019 the deprecated V2 is the value refused
	v2 := corev3.ApiVersion_V2
	for v, ok := range map[corev3.ApiVersion]bool{corev3.ApiVersion_AUTO: true, corev3.ApiVersion_V3: true, v2: false} {
		if err := CheckTransportVersion(v); (err == nil) != ok {
			t.Errorf("%s: %v", v, err)
		}
	}
}

// TestSetTLSPeers checks the principals Envoy names: the first URI SAN,
// else the first DNS SAN, else the subject; nothing on plaintext.
func TestSetTLSPeers(t *testing.T) {
	_, leaves := tlstest.Leaves(t,
		tlstest.Options{CommonName: "c", URIs: []string{"spiffe://a/1", "spiffe://a/2"}, DNS: []string{"c.example"}, Client: true},
		tlstest.Options{CommonName: "s", DNS: []string{"s.example", "t.example"}},
		tlstest.Options{CommonName: "bare", Client: true})
	leaves[2].Cert.DNSNames = nil
	for name, tc := range map[string]struct {
		info          *accesslog.TLSInfo
		source, dest  string
		wantCert, tls bool
	}{
		"plaintext":             {},
		"URI and DNS SANs":      {info: &accesslog.TLSInfo{PeerCertificate: leaves[0].Cert, LocalCertificate: leaves[1].Cert}, source: "spiffe://a/1", dest: "s.example", wantCert: true, tls: true},
		"subject":               {info: &accesslog.TLSInfo{PeerCertificate: leaves[2].Cert}, source: leaves[2].Cert.Subject.String(), wantCert: true, tls: true},
		"no client certificate": {info: &accesslog.TLSInfo{LocalCertificate: leaves[1].Cert}, dest: "s.example", tls: true},
	} {
		src, dst := &authv3.AttributeContext_Peer{}, &authv3.AttributeContext_Peer{}
		SetTLSPeers(src, dst, tc.info, true)
		if src.Principal != tc.source || dst.Principal != tc.dest || (src.Certificate != "") != tc.wantCert {
			t.Errorf("%s: source %q (certificate %v), destination %q", name, src.Principal, src.Certificate != "", dst.Principal)
		}
		if s := TLSSession(tc.info, "sni"); (s != nil) != tc.tls || (s != nil && s.Sni != "sni") {
			t.Errorf("%s: tls_session %v", name, s)
		}
	}
}
