package tlsconfig

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// lockedBuffer is a key log file: one Write per line, from any goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// lines are the lines written, sorted.
func (l *lockedBuffer) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := strings.Split(strings.TrimSuffix(l.b.String(), "\n"), "\n")
	if len(out) == 1 && out[0] == "" {
		return nil
	}
	slices.Sort(out)
	return out
}

// opener opens every path as buf, recording the paths.
func opener(buf *lockedBuffer, paths *[]string) KeyLogOpener {
	return func(path string) (io.Writer, error) {
		*paths = append(*paths, path)
		return buf, nil
	}
}

func cidrRange(prefix string, bits uint32) *corev3.CidrRange {
	return &corev3.CidrRange{AddressPrefix: prefix, PrefixLen: wrapperspb.UInt32(bits)}
}

func TestServerKeyLog(t *testing.T) {
	p := newPKI(t)
	for _, tc := range []struct {
		name   string
		kl     *tlsv3.TlsKeyLog
		max    uint16
		logged bool
	}{
		{"TLS 1.3, every connection", &tlsv3.TlsKeyLog{Path: "/keys"}, tls.VersionTLS13, true},
		{"TLS 1.2", &tlsv3.TlsKeyLog{Path: "/keys"}, tls.VersionTLS12, true},
		{"both addresses in range", &tlsv3.TlsKeyLog{Path: "/keys", LocalAddressRange: []*corev3.CidrRange{cidrRange("127.0.0.0", 8)},
			RemoteAddressRange: []*corev3.CidrRange{cidrRange("10.0.0.0", 8), cidrRange("127.0.0.1", 32)}}, tls.VersionTLS13, true},
		{"remote address out of range", &tlsv3.TlsKeyLog{Path: "/keys", RemoteAddressRange: []*corev3.CidrRange{cidrRange("10.0.0.0", 8)}}, tls.VersionTLS13, false},
		{"local address out of range", &tlsv3.TlsKeyLog{Path: "/keys", LocalAddressRange: []*corev3.CidrRange{cidrRange("::1", 128)}}, tls.VersionTLS13, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := p.context()
			ctx.CommonTlsContext.KeyLog = tc.kl
			ctx.CommonTlsContext.AlpnProtocols = []string{"h2"}
			var (
				file  lockedBuffer
				paths []string
			)
			s, err := compileServer(ctx, opener(&file, &paths))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(paths, []string{"/keys"}) {
				t.Errorf("opened %q", paths)
			}
			// The client's own key log is the reference: the same
			// secrets, the same lines.
			var client lockedBuffer
			cfg := p.clientConfig(t, false)
			cfg.MaxVersion, cfg.KeyLogWriter = tc.max, &client
			if _, serr, cerr := handshake(t, s, nil, cfg); serr != nil || cerr != nil {
				t.Fatalf("server %v, client %v", serr, cerr)
			}
			want := client.lines()
			if len(want) == 0 {
				t.Fatal("the client logged nothing")
			}
			if !tc.logged {
				want = nil
			}
			if got := file.lines(); !slices.Equal(got, want) {
				t.Errorf("key log\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

func TestClientKeyLog(t *testing.T) {
	p := newPKI(t)
	s, err := CompileServer(p.context())
	if err != nil {
		t.Fatal(err)
	}
	var (
		file  lockedBuffer
		paths []string
	)
	cl, err := compileClient(&tlsv3.UpstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{KeyLog: &tlsv3.TlsKeyLog{Path: "/up"}}}, opener(&file, &paths))
	if err != nil {
		t.Fatal(err)
	}
	// The server's secrets, as a Go server logs them.
	var server lockedBuffer
	s.cfg = s.cfg.Clone()
	s.cfg.KeyLogWriter = &server
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, b := loopbackPair(t)
	done := make(chan error, 1)
	go func() {
		_, _, err := s.Handshake(ctx, a, nil)
		done <- err
	}()
	if _, err := cl.Handshake(ctx, b, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, want := file.lines(), server.lines(); len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("key log\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestKeyLogErrors(t *testing.T) {
	ctc := &tlsv3.CommonTlsContext{KeyLog: &tlsv3.TlsKeyLog{Path: "/k", LocalAddressRange: []*corev3.CidrRange{cidrRange("nope", 8)},
		RemoteAddressRange: []*corev3.CidrRange{cidrRange("10.0.0.0", 33)}}}
	_, err := CompileClient(&tlsv3.UpstreamTlsContext{CommonTlsContext: ctc})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`common_tls_context.key_log.local_address_range[0].address_prefix: "nope" is not an IP address`,
		"common_tls_context.key_log.remote_address_range[0].prefix_len: 33 is longer than an IPv4 address (32 bits)",
		"common_tls_context.key_log.path: key log files cannot be opened here",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	// An empty path logs nothing, as in Envoy, and opens nothing.
	if _, err := CompileClient(&tlsv3.UpstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{KeyLog: &tlsv3.TlsKeyLog{}}}); err != nil {
		t.Errorf("empty path: %v", err)
	}
}
