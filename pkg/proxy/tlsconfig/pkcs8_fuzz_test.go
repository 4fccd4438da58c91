package tlsconfig

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/asn1"
	"encoding/pem"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

// encryptPKCS8 writes der (a PKCS#8 PrivateKeyInfo) as openssl pkcs8
// -topk8 -v2 aes-128-cbc does, for the fuzz corpus only: the decoder's
// correctness is checked against keys openssl encrypted (pkcs8_test.go).
func encryptPKCS8(t testing.TB, der, password []byte, iterations int) []byte {
	t.Helper()
	salt, iv := bytes.Repeat([]byte{7}, 8), bytes.Repeat([]byte{9}, aes.BlockSize)
	key, err := pbkdf2.Key(sha256.New, string(password), salt, iterations, 16)
	if err != nil {
		t.Fatal(err)
	}
	n := aes.BlockSize - len(der)%aes.BlockSize
	plain := append(append([]byte{}, der...), bytes.Repeat([]byte{byte(n)}, n)...)
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(plain, plain)
	raw := func(v any) asn1.RawValue {
		b, err := asn1.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return asn1.RawValue{FullBytes: b}
	}
	out, err := asn1.Marshal(encryptedPrivateKeyInfo{
		Algorithm: algorithmIdentifier{Algorithm: oidPBES2, Parameters: raw(pbes2Params{
			KeyDerivationFunc: algorithmIdentifier{Algorithm: oidPBKDF2, Parameters: raw(pbkdf2Params{
				Salt: salt, IterationCount: iterations, PRF: algorithmIdentifier{Algorithm: oidHMACSHA256, Parameters: asn1.NullRawValue},
			})},
			EncryptionScheme: algorithmIdentifier{Algorithm: oidAES128CBC, Parameters: raw(iv)},
		})},
		EncryptedData: plain,
	})
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: out})
}

// FuzzEncryptedPKCS8 feeds arbitrary encrypted PKCS#8 keys and passwords
// to the key loader: it must answer with a key or an error, never panic,
// and the work a key may ask for is bounded (small bounds here, so that
// the fuzzer does not spend its time deriving keys).
func FuzzEncryptedPKCS8(f *testing.F) {
	ca, err := tlstest.NewCA("fuzz")
	if err != nil {
		f.Fatal(err)
	}
	leaf, err := ca.Issue(tlstest.Options{})
	if err != nil {
		f.Fatal(err)
	}
	b, _ := pem.Decode(leaf.KeyPEM)
	if b.Type != "PRIVATE KEY" {
		f.Fatalf("tlstest wrote a %q block, want PRIVATE KEY", b.Type)
	}
	seed := encryptPKCS8(f, b.Bytes, []byte("secret"), 4)
	if k, err := parsePrivateKey(seed, []byte("secret")); err != nil || k == nil {
		f.Fatalf("the seed does not decrypt: %v", err)
	}
	f.Add(seed, []byte("secret"))
	f.Add(seed, []byte("wrong"))
	f.Add([]byte("-----BEGIN ENCRYPTED PRIVATE KEY-----\nMAA=\n-----END ENCRYPTED PRIVATE KEY-----\n"), []byte("x"))
	f.Fuzz(func(t *testing.T, data, password []byte) {
		key, err := parsePrivateKeyLimited(data, password, pkcs8Limits{maxIterations: 64, maxScryptMemory: 1 << 16})
		if err == nil && key == nil {
			t.Fatal("no key and no error")
		}
	})
}
