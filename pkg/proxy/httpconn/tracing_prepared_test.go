package httpconn

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"strings"
	"testing"
	"time"
	"unsafe"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/go-logr/logr"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/builtin"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpconn/http1"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// TestPreparedNamesMissStartNames: the names prepareRequest appends fall
// in buckets of none of the names the tracing's start reads, so that the
// start looks past them; the finished span's names are among them, so
// that a pass for them does not.
func TestPreparedNamesMissStartNames(t *testing.T) {
	if preparedNames&startHeaderTable.names != 0 {
		t.Errorf("preparedNames %#x share buckets %#x with the start's names", preparedNames, preparedNames&startHeaderTable.names)
	}
	if preparedNames&sampledHeaderTable.names == 0 || preparedNames&finishHeaderTable.names == 0 {
		t.Error("preparedNames miss the finished span's names")
	}
}

// TestPreparedAppendsInPreparedNames drives prepareRequest with every
// option that appends a field (use_remote_address, an x-forwarded-for,
// append_x_forwarded_port, add_user_agent with a node, via, SANITIZE_SET
// with a client certificate, internal and external clients, a generated
// request id): every name it appends but x-request-id is in
// preparedNames, the id it generates is noted at its field, and the
// start's pass from the notes finds what a pass over every field finds.
func TestPreparedAppendsInPreparedNames(t *testing.T) {
	cert := testCertificate(t)
	for _, remote := range []string{"127.0.0.1", "203.0.113.7"} {
		for _, clientID := range []bool{false, true} {
			cfg := hcm(&routev3.RouteConfiguration{})
			cfg.Tracing = &hcmv3.HttpConnectionManager_Tracing{}
			cfg.UseRemoteAddress = wrapperspb.Bool(true)
			cfg.AppendXForwardedPort = true
			cfg.AddUserAgent = wrapperspb.Bool(true)
			cfg.Via = "1.1 outrigger"
			cfg.ForwardClientCertDetails = hcmv3.HttpConnectionManager_SANITIZE_SET
			cfg.SetCurrentClientCertDetails = &hcmv3.HttpConnectionManager_SetCurrentClientCertDetails{Subject: wrapperspb.Bool(true)}
			cfg.InternalAddressConfig = &hcmv3.HttpConnectionManager_InternalAddressConfig{
				CidrRanges: []*corev3.CidrRange{{AddressPrefix: "127.0.0.0", PrefixLen: wrapperspb.UInt32(8)}},
			}
			m, err := New(cfg, Deps{
				Stats: stats.NewStore(), Log: logr.Discard(), Extensions: builtin.Registry(),
				Tracing: tracing.Context{Node: &corev3.Node{Id: "node-1", Cluster: "cluster-1"}},
			})
			if err != nil {
				t.Fatal(err)
			}
			s := &stream{m: m}
			s.remoteIP, s.local, s.scheme, s.method, s.path, s.authority = remote, "127.0.0.1:10000", "http", "GET", "/", "host"
			s.tls = &accesslog.TLSInfo{PeerCertificate: cert, PeerChain: []*x509.Certificate{cert}, LocalCertificate: cert}
			req := http1.Request{Headers: http1.Headers{
				{Name: []byte("host"), Value: []byte("host")},
				{Name: []byte("accept"), Value: []byte("*/*")},
			}}
			if clientID {
				req.Headers = append(req.Headers, http1.Header{Name: []byte("x-request-id"), Value: []byte("client-id")})
			}
			s.copyRequestHeaders(&req)
			copied := len(s.reqHeaders.fields)
			if !s.prepareRequest() {
				t.Fatalf("%s: prepareRequest answered", remote)
			}
			h := &s.reqHeaders
			var appended []string
			for _, f := range h.fields[copied:] {
				appended = append(appended, f.name)
				if f.name != "x-request-id" && nameBit(f.name)&preparedNames == 0 {
					t.Errorf("%s: prepareRequest appends %s, which is not in preparedNames", remote, f.name)
				}
			}
			// Each option's field is there, or the test misses one.
			options := []string{"x-forwarded-for", "x-forwarded-proto", "x-forwarded-port",
				"x-envoy-downstream-service-cluster", "x-envoy-downstream-service-node", "via", xfccHeader}
			if remote == "127.0.0.1" {
				options = append(options, "x-envoy-internal")
			} else {
				options = append(options, "x-envoy-external-address")
			}
			for _, name := range options {
				if !strings.Contains(","+strings.Join(appended, ",")+",", ","+name+",") {
					t.Errorf("%s: %s not appended (%v)", remote, name, appended)
				}
			}
			id, _ := h.Get("x-request-id")
			generated := uintptr(unsafe.Pointer(unsafe.StringData(id))) == s.genID.at
			at, idAt := s.copied.start(h, startHeaderTable.names, s.genID.at)
			switch {
			case clientID && remote == "127.0.0.1":
				// Internal: the client's id is kept; its copied name
				// is looked for.
				if generated || idAt >= 0 || at != 0 {
					t.Errorf("%s: a client's id: generated %v, id at %d, pass from %d", remote, generated, idAt, at)
				}
			case !clientID:
				if !generated || idAt < 0 || h.fields[idAt].value != id || at != len(h.fields) {
					t.Errorf("%s: generated id %q at %d, pass from %d of %d fields", remote, id, idAt, at, len(h.fields))
				}
			}
			s.findStartHeaders(startHeaderTable)
			got := &s.traceHeaders
			var want startHeaders
			want.find(h, startHeaderTable)
			for k, name := range spanHeaderNames {
				g, gok := got.get(k)
				w, wok := want.get(k)
				if g != w || gok != wok || (gok && got.values[k].at != want.values[k].at) {
					t.Errorf("%s, client id %v: %s = %q, %v (at %d); a pass of every field gives %q, %v (at %d)",
						remote, clientID, name, g, gok, got.values[k].at, w, wok, want.values[k].at)
				}
			}
		}
	}
}

// testCertificate is a self-signed certificate, a client's for
// forward_client_cert_details.
func testCertificate(t *testing.T) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "client"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
