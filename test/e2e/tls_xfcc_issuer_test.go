package e2e

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("x-forwarded-client-cert issuer", func() {
	It("adds the client certificate's issuer, quoted, after the other details", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		echo := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = fmt.Fprint(w, r.Header.Get("X-Forwarded-Client-Cert"))
		}), false)
		port := freePort()
		Start(dir, tlsBootstrap(port, tlsInspector, []string{
			xfccChain(f, "SANITIZE_SET", "subject: true, issuer: true"),
		}, tcpCluster("echo", portNum(echo))))

		clientCert, err := tls.LoadX509KeyPair(f.clientCert, f.clientKey)
		Expect(err).NotTo(HaveOccurred())
		cfg := &tls.Config{RootCAs: f.caPool, ServerName: "sanitize-set.example.com", Certificates: []tls.Certificate{clientCert}}
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
		defer client.CloseIdleConnections()
		r := httpDo(client, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/", port), nil, nil)
		Expect(r.Status).To(Equal(200), r.Body)

		sum := sha256.Sum256(f.client.Cert.Raw)
		issuer := f.client.Cert.Issuer.String()
		Expect(issuer).NotTo(BeEmpty())
		Expect(r.Body).To(Equal("By=" + serverSAN + ";Hash=" + hex.EncodeToString(sum[:]) +
			`;Subject="CN=frontend,O=Outrigger tests";Issuer="` + issuer + `"`))
		Expect(strings.Count(r.Body, "Issuer=")).To(Equal(1))
	})
})
