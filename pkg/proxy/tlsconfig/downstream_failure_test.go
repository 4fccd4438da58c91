package tlsconfig

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"
)

// serverFailure runs a server handshake against what client does on the
// other end and returns the server's failure reason.
func serverFailure(t *testing.T, client func(net.Conn) error) string {
	t.Helper()
	p := newPKI(t)
	s, err := CompileServer(p.context())
	if err != nil {
		t.Fatal(err)
	}
	a, b := loopbackPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() { _ = client(b) }()
	_, _, err = s.Handshake(ctx, a, nil)
	if err == nil {
		t.Fatal("the handshake succeeded")
	}
	_ = b.Close()
	return DownstreamFailureReason(err)
}

func TestDownstreamFailureReason(t *testing.T) {
	for name, tc := range map[string]struct {
		client func(net.Conn) error
		want   string
	}{
		"plaintext HTTP": {
			client: func(w net.Conn) error {
				_, err := w.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
				return err
			},
			want: "TLS_error:|268435612:SSL routines:OPENSSL_internal:HTTP_REQUEST:TLS_error_end",
		},
		"other bytes": {
			client: func(w net.Conn) error {
				_, err := w.Write([]byte("SSH-2.0-OpenSSH_9.0\r\n"))
				return err
			},
			want: "TLS_error:|268435703:SSL routines:OPENSSL_internal:WRONG_VERSION_NUMBER:TLS_error_end",
		},
	} {
		t.Run(name, func(t *testing.T) {
			if got := serverFailure(t, tc.client); got != tc.want {
				t.Fatalf("reason %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDownstreamFailureReasonOfAnOldClient(t *testing.T) {
	p := newPKI(t)
	s, err := CompileServer(p.context())
	if err != nil {
		t.Fatal(err)
	}
	cfg := p.clientConfig(t, false)
	cfg.MinVersion, cfg.MaxVersion = tls.VersionTLS10, tls.VersionTLS11
	_, serr, _ := handshake(t, s, nil, cfg)
	if serr == nil {
		t.Fatal("a TLS 1.1 client got through")
	}
	if got, want := DownstreamFailureReason(serr), "TLS_error:|268435696:SSL routines:OPENSSL_internal:UNSUPPORTED_PROTOCOL:TLS_error_end"; got != want {
		t.Fatalf("reason %q (%v), want %q", got, serr, want)
	}
	if got := DownstreamFailureReason(context.DeadlineExceeded); got != "" {
		t.Fatalf("timeout reason %q", got)
	}
}
