package tlsinspector

import (
	"bytes"
	"crypto/tls"
	"errors"
	"slices"
	"testing"
	"time"

	tiv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/listenerfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/listenerfilter/listenerfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// accepted sends b from a loopback client and returns the server side
// of the connection, wrapped for the listener filters.
func accepted(t *testing.T, b []byte) *listenerfilter.Socket {
	t.Helper()
	c, s := listenerfiltertest.Pair(t, 5*time.Second)
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestOnAccept(t *testing.T) {
	store := stats.NewStore()
	// A small first read, so that the filter has to grow its buffer.
	f, err := Factory{}.Compile(&tiv3.TlsInspector{InitialReadBufferSize: wrapperspb.UInt32(256)}, listenerfilter.Context{Stats: store})
	if err != nil {
		t.Fatal(err)
	}
	hello := clientHelloBytes(t, &tls.Config{ServerName: "api.example.com", NextProtos: []string{"h2", "http/1.1"}})
	s := accepted(t, hello)
	if err := f.OnAccept(s); err != nil {
		t.Fatal(err)
	}
	if s.DetectedTransportProtocol() != "tls" || s.RequestedServerName() != "api.example.com" || !slices.Equal(s.ApplicationProtocols(), []string{"h2", "http/1.1"}) {
		t.Errorf("detected %q %q %v", s.DetectedTransportProtocol(), s.RequestedServerName(), s.ApplicationProtocols())
	}
	// Nothing was consumed: the handshake reads the whole ClientHello.
	got := make([]byte, len(hello))
	if _, err := s.NetConn().Read(got); err != nil || !bytes.Equal(got[:5], hello[:5]) {
		t.Errorf("first bytes %x, %v", got[:5], err)
	}

	plain := accepted(t, []byte("GET / HTTP/1.1\r\n"))
	if err := f.OnAccept(plain); err != nil || plain.DetectedTransportProtocol() != "" {
		t.Errorf("plaintext: %v, %q", err, plain.DetectedTransportProtocol())
	}

	huge := accepted(t, []byte{0x16, 0x03, 0x01, 0x00, 0x04, 0x01, 0x01, 0x00, 0x01})
	if err := f.OnAccept(huge); !errors.Is(err, listenerfilter.ErrRejected) {
		t.Errorf("too large: %v", err)
	}
	for name, want := range map[string]uint64{
		"tls_found": 1, "tls_not_found": 1, "sni_found": 1, "alpn_found": 1, "client_hello_too_large": 1, "sni_not_found": 0,
	} {
		if got := store.Counter("tls_inspector." + name).Value(); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}

func TestMaxClientHelloSize(t *testing.T) {
	if _, err := (Factory{}).Compile(&tiv3.TlsInspector{MaxClientHelloSize: wrapperspb.UInt32(maxClientHello + 1)}, listenerfilter.Context{Stats: stats.NewStore()}); err == nil ||
		err.Error() != "max_client_hello_size: max_client_hello_size of 65537 is greater than maximum of 65536" {
		t.Errorf("error %v", err)
	}
	hello := clientHelloBytes(t, &tls.Config{ServerName: "api.example.com"})
	size := len(hello) - recordHeaderLen - handshakeHeaderLen // the handshake message's body
	for _, tc := range []struct {
		limit    uint32
		tooLarge uint64
	}{
		{uint32(size), 0},
		{uint32(size - 1), 1},
	} {
		store := stats.NewStore()
		f, err := Factory{}.Compile(&tiv3.TlsInspector{MaxClientHelloSize: wrapperspb.UInt32(tc.limit)}, listenerfilter.Context{Stats: store})
		if err != nil {
			t.Fatal(err)
		}
		err = f.OnAccept(accepted(t, hello))
		if (tc.tooLarge > 0) != errors.Is(err, listenerfilter.ErrRejected) {
			t.Errorf("limit %d: %v", tc.limit, err)
		}
		if got := store.Counter("tls_inspector.client_hello_too_large").Value(); got != tc.tooLarge {
			t.Errorf("limit %d: client_hello_too_large = %d, want %d", tc.limit, got, tc.tooLarge)
		}
	}
}

func TestCloseConnectionOnClientHelloParsingErrors(t *testing.T) {
	store := stats.NewStore()
	f, err := Factory{}.Compile(&tiv3.TlsInspector{CloseConnectionOnClientHelloParsingErrors: true}, listenerfilter.Context{Stats: store})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.OnAccept(accepted(t, []byte("GET / HTTP/1.1\r\n"))); !errors.Is(err, listenerfilter.ErrRejected) {
		t.Errorf("plaintext: %v, want the connection closed", err)
	}
	s := accepted(t, clientHelloBytes(t, &tls.Config{ServerName: "api.example.com"}))
	if err := f.OnAccept(s); err != nil || s.DetectedTransportProtocol() != "tls" {
		t.Errorf("ClientHello: %v, %q", err, s.DetectedTransportProtocol())
	}
	if got := store.Counter("tls_inspector.tls_not_found").Value(); got != 0 {
		t.Errorf("tls_not_found = %d, want 0 (Envoy counts a closed connection nowhere)", got)
	}
}
