package tlsconfig

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

// openssl runs openssl with args (bounded), skipping the test when it is
// not installed (hack/tls-tools.sh installs it).
func openssl(t *testing.T, args ...string) {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl is not installed (hack/tls-tools.sh installs it)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "openssl", args...).CombinedOutput(); err != nil {
		t.Fatalf("openssl %v: %v: %s", args, err, out)
	}
}

// TestEncryptedPKCS8 decrypts keys that openssl encrypted in PKCS#8 with
// each scheme it offers, for an ECDSA and an RSA key, and checks the
// errors of a wrong or missing password and of the refused PBES1 schemes.
func TestEncryptedPKCS8(t *testing.T) {
	p := newPKI(t)
	rsaLeaf, err := p.ca.Issue(tlstest.Options{RSA: true})
	if err != nil {
		t.Fatal(err)
	}
	rsaCert := p.write(t, "rsa-cert.pem", rsaLeaf.CertPEM)
	rsaKey := p.write(t, "rsa-key.pem", rsaLeaf.KeyPEM)
	load := func(cert, key string, password []byte) error {
		tc := &tlsv3.TlsCertificate{CertificateChain: file(cert), PrivateKey: file(key)}
		if password != nil {
			tc.Password = inline(string(password))
		}
		_, err := loadCertificate(tc)
		return err
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"aes-256-cbc, hmacWithSHA256 (openssl's default)", []string{"-v2", "aes-256-cbc"}},
		{"aes-128-cbc", []string{"-v2", "aes-128-cbc"}},
		{"aes-192-cbc, hmacWithSHA512", []string{"-v2", "aes-192-cbc", "-v2prf", "hmacWithSHA512"}},
		{"aes-256-cbc, hmacWithSHA1", []string{"-v2", "aes-256-cbc", "-v2prf", "hmacWithSHA1"}},
		{"aes-256-cbc, hmacWithSHA384, one iteration", []string{"-v2", "aes-256-cbc", "-v2prf", "hmacWithSHA384", "-iter", "1"}},
		{"des3, hmacWithSHA224", []string{"-v2", "des3", "-v2prf", "hmacWithSHA224"}},
		{"scrypt", []string{"-v2", "aes-256-cbc", "-scrypt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []struct{ cert, key string }{{p.certFile, p.keyFile}, {rsaCert, rsaKey}} {
				out := filepath.Join(t.TempDir(), "key.pem")
				openssl(t, append([]string{"pkcs8", "-topk8", "-in", k.key, "-passout", "pass:s3cret", "-out", out}, tc.args...)...)
				if err := load(k.cert, out, []byte("s3cret")); err != nil {
					t.Fatalf("%s: %v", k.key, err)
				}
				err := load(k.cert, out, []byte("wrong"))
				if want := "private_key: " + out + ": ENCRYPTED PRIVATE KEY: cannot decrypt the private key with the password"; err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("wrong password: got %v, want %q", err, want)
				}
				err = load(k.cert, out, nil)
				if want := "private_key: " + out + ": the private key is encrypted (ENCRYPTED PRIVATE KEY) and no password is configured"; err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("no password: got %v, want %q", err, want)
				}
			}
		})
	}
	t.Run("genpkey -aes256", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "key.pem")
		openssl(t, "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-aes256", "-pass", "pass:s3cret", "-out", out)
		key, err := parsePrivateKey(mustRead(t, out), []byte("s3cret"))
		if err != nil || key == nil {
			t.Fatalf("got %v, %v", key, err)
		}
	})
	t.Run("PBES1 is refused by name", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "key.pem")
		openssl(t, "pkcs8", "-topk8", "-in", p.keyFile, "-passout", "pass:s3cret", "-v1", "PBE-SHA1-3DES", "-out", out)
		err := load(p.certFile, out, []byte("s3cret"))
		if want := "the key is encrypted with pbeWithSHAAnd3-KeyTripleDES-CBC, which is not supported"; err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v, want %q", err, want)
		}
	})
	t.Run("limits", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "key.pem")
		openssl(t, "pkcs8", "-topk8", "-in", p.keyFile, "-passout", "pass:s3cret", "-v2", "aes-128-cbc", "-iter", "5000", "-out", out)
		_, err := parsePrivateKeyLimited(mustRead(t, out), []byte("s3cret"), pkcs8Limits{maxIterations: 4999, maxScryptMemory: 1 << 20})
		if want := "PBKDF2 iteration count 5000 is out of range [1, 4999]"; err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v, want %q", err, want)
		}
		openssl(t, "pkcs8", "-topk8", "-in", p.keyFile, "-passout", "pass:s3cret", "-scrypt", "-out", out)
		_, err = parsePrivateKeyLimited(mustRead(t, out), []byte("s3cret"), pkcs8Limits{maxIterations: 1, maxScryptMemory: 1 << 20})
		if want := "scrypt parameters N=16384 r=8 p=1 are invalid or need more than 1048576 bytes"; err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v, want %q", err, want)
		}
	})
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
