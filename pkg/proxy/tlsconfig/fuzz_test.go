package tlsconfig

import (
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

// FuzzParsePEM feeds arbitrary bytes to the certificate, key and CRL
// loaders: they must answer with what they read or an error, never panic.
func FuzzParsePEM(f *testing.F) {
	ca, err := tlstest.NewCA("fuzz")
	if err != nil {
		f.Fatal(err)
	}
	leaf, err := ca.Issue(tlstest.Options{RSA: true})
	if err != nil {
		f.Fatal(err)
	}
	crl, err := ca.CRL(leaf.Cert.NotAfter, leaf.Cert)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(ca.PEM)
	f.Add(crl)
	f.Add(leaf.KeyPEM)
	f.Add(append(append([]byte("comment\n"), leaf.CertPEM...), ca.PEM...))
	f.Add([]byte("-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n"))
	f.Add([]byte("-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n\nAAAA\n-----END RSA PRIVATE KEY-----\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		certs, err := ParseCertificates(data)
		if err == nil && len(certs) == 0 {
			t.Fatal("no certificates and no error")
		}
		key, err := ParsePrivateKey(data)
		if err == nil && key == nil {
			t.Fatal("no key and no error")
		}
		crls, err := ParseCRLs(data)
		if err == nil && len(crls) == 0 {
			t.Fatal("no CRL and no error")
		}
	})
}
