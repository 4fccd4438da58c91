package server

import (
	"slices"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
)

// TestWatchDirs checks which directories a secret's files are followed
// in: its watched_directory, else each file's directory once.
func TestWatchDirs(t *testing.T) {
	file := func(n string) *corev3.DataSource {
		return &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: n}}
	}
	for _, tc := range []struct {
		name string
		sec  *tlsv3.Secret
		want []watchDir
	}{
		{"files' directories", &tlsv3.Secret{Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{
			CertificateChain: file("/a/crt"), PrivateKey: file("/b/key"), Password: file("/a/pw")}}},
			[]watchDir{{path: "/a"}, {path: "/b"}}},
		{"certificate's watched_directory", &tlsv3.Secret{Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{
			CertificateChain: file("/a/crt"), WatchedDirectory: &corev3.WatchedDirectory{Path: "/w", WatchModify: true}}}},
			[]watchDir{{path: "/w", modify: true}}},
		{"validation context's watched_directory", &tlsv3.Secret{Type: &tlsv3.Secret_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
			TrustedCa: file("/a/ca"), WatchedDirectory: &corev3.WatchedDirectory{Path: "/v"}}}},
			[]watchDir{{path: "/v"}}},
		{"inline", &tlsv3.Secret{Type: &tlsv3.Secret_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
			TrustedCa: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: "x"}}}}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := watchDirs(tc.sec); !slices.Equal(got, tc.want) {
				t.Errorf("watchDirs = %v, want %v", got, tc.want)
			}
		})
	}
}
