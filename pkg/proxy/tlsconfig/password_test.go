package tlsconfig

import (
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
)

func inline(s string) *corev3.DataSource {
	return &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: s}}
}

func TestPrivateKeyPassword(t *testing.T) {
	p := newPKI(t)
	b, _ := pem.Decode(p.server.KeyPEM)
	//lint:ignore SA1019 the legacy encryption is what the password decrypts
	enc, err := x509.EncryptPEMBlock(rand.Reader, b.Type, b.Bytes, []byte("secret"), x509.PEMCipherAES256)
	if err != nil {
		t.Fatal(err)
	}
	encrypted := p.write(t, "encrypted.pem", pem.EncodeToMemory(enc))
	pkcs8 := p.write(t, "pkcs8.pem", pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: []byte{1}}))
	for _, tc := range []struct {
		name     string
		key      string
		password *corev3.DataSource
		err      string
	}{
		{"decrypted with the password", encrypted, inline("secret"), ""},
		{"a password for a plain key is no error", p.keyFile, inline("secret"), ""},
		{"wrong password", encrypted, inline("nope"), "private_key: " + encrypted + ": cannot decrypt the private key with the password"},
		{"no password", encrypted, nil, "no password is configured"},
		{"encrypted PKCS#8 that does not parse", pkcs8, inline("secret"), "private_key: " + pkcs8 + ": ENCRYPTED PRIVATE KEY: EncryptedPrivateKeyInfo: "},
		{"unreadable password", encrypted, file(p.dir + "/missing"), "password.filename: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadCertificate(&tlsv3.TlsCertificate{CertificateChain: file(p.certFile), PrivateKey: file(tc.key), Password: tc.password})
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("got %v, want an error with %q", err, tc.err)
			}
		})
	}
}
