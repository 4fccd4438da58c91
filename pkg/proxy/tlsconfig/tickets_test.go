package tlsconfig

import (
	"crypto/tls"
	"runtime"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
)

// ticketSecret is a session_ticket_keys secret of the 80-byte keys
// whose first bytes are firsts, in order.
func ticketSecret(name string, firsts ...byte) *tlsv3.Secret {
	keys := &tlsv3.TlsSessionTicketKeys{}
	for _, b := range firsts {
		k := make([]byte, sessionTicketKeyLen)
		k[0] = b
		keys.Keys = append(keys.Keys, &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: k}})
	}
	return &tlsv3.Secret{Name: name, Type: &tlsv3.Secret_SessionTicketKeys{SessionTicketKeys: keys}}
}

// TestSessionTicketKeysFromSecret checks that
// session_ticket_keys_sds_secret_config's keys issue and accept tickets,
// and that rotating the secret rotates them: a ticket of a key still in
// the list resumes, one of a key removed does not.
func TestSessionTicketKeysFromSecret(t *testing.T) {
	p := newPKI(t)
	prov := NewProvider("tickets", ticketSecret("tickets", 1))
	dc := p.context()
	dc.SessionTicketKeysType = &tlsv3.DownstreamTlsContext_SessionTicketKeysSdsSecretConfig{
		SessionTicketKeysSdsSecretConfig: &tlsv3.SdsSecretConfig{Name: "tickets"}}
	s, err := CompileServerWithSecrets(dc, resolverOf(prov), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Another server with the same keys: tickets are the keys', not the
	// server's.
	other, err := CompileServerWithSecrets(dc, resolverOf(NewProvider("tickets", ticketSecret("tickets", 1))), nil)
	if err != nil {
		t.Fatal(err)
	}
	handshakeOn := func(s *Server, cache tls.ClientSessionCache) bool { return p.resumedOn(t, s, cache) }
	cache := tls.NewLRUClientSessionCache(4)
	if handshakeOn(s, cache) {
		t.Fatal("the first handshake resumed")
	}
	if !handshakeOn(other, cache) {
		t.Fatal("a server with the same keys did not resume the ticket")
	}

	// Key 2 first (it issues), key 1 still accepted.
	if err := prov.Update(ticketSecret("tickets", 2, 1)); err != nil {
		t.Fatal(err)
	}
	old := tls.NewLRUClientSessionCache(4)
	handshakeOn(other, old) // a ticket of key 1
	if !handshakeOn(s, old) {
		t.Fatal("a ticket of a key still listed was not resumed")
	}
	// Key 1 gone: its tickets are not resumed.
	if err := prov.Update(ticketSecret("tickets", 2)); err != nil {
		t.Fatal(err)
	}
	old = tls.NewLRUClientSessionCache(4)
	handshakeOn(other, old)
	if handshakeOn(s, old) {
		t.Fatal("a ticket of a removed key was resumed")
	}

	// A secret of another kind, or keys of the wrong length, are
	// rejected and the keys stay.
	if err := prov.Update(certSecret("tickets", p.server)); err == nil || !strings.Contains(err.Error(), `secret "tickets" holds no session_ticket_keys`) {
		t.Fatalf("certificate secret: error %v", err)
	}
	bad := ticketSecret("tickets", 3)
	bad.GetSessionTicketKeys().Keys[0] = &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: "short"}}
	if err := prov.Update(bad); err == nil || !strings.Contains(err.Error(), "Incorrect TLS session ticket key length") {
		t.Fatalf("short key: error %v", err)
	}
	if _, err := CompileServer(dc); err == nil || !strings.Contains(err.Error(), "session_ticket_keys_sds_secret_config: secrets are not available here") {
		t.Fatalf("without secrets: error %v", err)
	}
	// The provider holds its servers weakly: s must live until the
	// rejected updates above have been checked against it, or a
	// collection in between leaves nothing to reject them.
	runtime.KeepAlive(s)
}
