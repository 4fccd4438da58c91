package tlsconfig

import (
	"errors"
	"testing"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// TestMaxVerifyDepth checks Envoy's depth: the trust anchor counts, the
// leaf does not, so a client certificate issued by trusted_ca itself
// needs depth 1 and fails at depth 0, counted as fail_verify_error.
func TestMaxVerifyDepth(t *testing.T) {
	p := newPKI(t)
	for name, tc := range map[string]struct {
		depth *wrapperspb.UInt32Value
		fail  bool
	}{
		"unset":   {},
		"depth 1": {depth: wrapperspb.UInt32(1)},
		"depth 0": {depth: wrapperspb.UInt32(0), fail: true},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := p.context()
			ctx.CommonTlsContext.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{
				ValidationContext: &tlsv3.CertificateValidationContext{TrustedCa: file(p.caFile), MaxVerifyDepth: tc.depth},
			}
			s, err := CompileServer(ctx)
			if err != nil {
				t.Fatal(err)
			}
			store, st := newStats()
			_, serr, cerr := handshake(t, s, st, p.clientConfig(t, true))
			if !tc.fail {
				if serr != nil || cerr != nil {
					t.Fatalf("refused: server %v, client %v", serr, cerr)
				}
				return
			}
			var ve *VerifyError
			if !errors.As(serr, &ve) || ve.Reason != FailError || !errors.Is(serr, errChainTooLong) {
				t.Fatalf("server error %v, want %v", serr, errChainTooLong)
			}
			if cerr == nil {
				t.Error("the client saw no alert")
			}
			if got := store.Counter("listener.test.ssl.fail_verify_error").Value(); got != 1 {
				t.Errorf("fail_verify_error = %d, want 1", got)
			}
		})
	}
}
