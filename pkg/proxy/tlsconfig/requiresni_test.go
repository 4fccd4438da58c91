package tlsconfig

import (
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

func TestRequireSNI(t *testing.T) {
	p := newPKI(t) // the server certificate covers localhost
	for _, tc := range []struct {
		name    string
		require *wrapperspb.BoolValue
		sni     string
		ok      bool
	}{
		{"a covered name", wrapperspb.Bool(true), "localhost", true},
		{"no server name", wrapperspb.Bool(true), "", false},
		{"a name no certificate covers", wrapperspb.Bool(true), "other.example.com", false},
		{"false lets a hello without a name through", wrapperspb.Bool(false), "", true},
		{"unset lets a hello without a name through", nil, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := p.context()
			ctx.RequireSni = tc.require
			s, err := CompileServer(ctx)
			if err != nil {
				t.Fatal(err)
			}
			store, st := newStats()
			cfg := p.clientConfig(t, false)
			cfg.ServerName, cfg.InsecureSkipVerify = tc.sni, true
			_, serr, cerr := handshake(t, s, st, cfg)
			fails := store.Counter("listener.test.ssl.fail_no_sni_match").Value()
			if tc.ok {
				if serr != nil || cerr != nil {
					t.Fatalf("server %v, client %v", serr, cerr)
				}
				if fails != 0 {
					t.Errorf("fail_no_sni_match = %d, want 0", fails)
				}
				return
			}
			if serr == nil || cerr == nil {
				t.Fatal("handshake succeeded, want it refused")
			}
			if fails != 1 {
				t.Errorf("fail_no_sni_match = %d, want 1", fails)
			}
			if got := store.Counter("listener.test.ssl.connection_error").Value(); got != 1 {
				t.Errorf("connection_error = %d, want 1", got)
			}
		})
	}
}

// tlsOptionsRSA issues an RSA server certificate for localhost.
func tlsOptionsRSA() tlstest.Options {
	return tlstest.Options{CommonName: "localhost", DNS: []string{"localhost"}, RSA: true}
}
