package e2e

import (
	"bufio"
	"crypto/md5"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// helloOf is the ClientHello a Go client with cfg sends, as a Go server
// of the test reads it: an account of the handshake independent of the
// proxy's parser.
func helloOf(cfg *tls.Config, f *tlsFiles) *tls.ClientHelloInfo {
	GinkgoHelper()
	cert, err := tls.LoadX509KeyPair(f.cert, f.key)
	Expect(err).NotTo(HaveOccurred())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer ln.Close()
	got := make(chan *tls.ClientHelloInfo, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		srv := tls.Server(c, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			got <- h
			return &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}}, nil
		}})
		_ = srv.Handshake()
	}()
	c, err := tls.Dial("tcp", ln.Addr().String(), cfg)
	Expect(err).NotTo(HaveOccurred())
	c.Close()
	var h *tls.ClientHelloInfo
	Eventually(got, 5*time.Second).Should(Receive(&h))
	return h
}

// joinDec joins values in decimal with dashes, as JA3 does.
func joinDec[T uint8 | uint16 | tls.CurveID](vs []T) string {
	var s []string
	for _, v := range vs {
		s = append(s, fmt.Sprint(uint16(v)))
	}
	return strings.Join(s, "-")
}

// hex4 joins values as four hex digits with commas, as JA4 does.
func hex4[T uint16 | tls.SignatureScheme](vs []T) string {
	var s []string
	for _, v := range vs {
		s = append(s, fmt.Sprintf("%04x", uint16(v)))
	}
	return strings.Join(s, ",")
}

var _ = Describe("TLS fingerprints", func() {
	It("logs the JA3 and JA4 fingerprints of a Go client's ClientHello, as computed independently from what a Go server reads of it", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		port := freePort()
		inspector := `{name: envoy.filters.listener.tls_inspector, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector, enable_ja3_fingerprinting: true, enable_ja4_fingerprinting: true}}`
		chain := `{filters: [` + directHCM("fp", "FP %TLS_JA3_FINGERPRINT% %TLS_JA4_FINGERPRINT%") + `], transport_socket: ` + f.transportSocket("", ", alpn_protocols: [http/1.1]") + `}`
		s := Start(dir, tlsBootstrap(port, inspector, []string{chain}), "--file-flush-interval-msec", "50")

		cfg := &tls.Config{RootCAs: f.caPool, ServerName: "localhost", NextProtos: []string{"http/1.1"}}
		c, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), cfg)
		Expect(err).NotTo(HaveOccurred())
		_, err = c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"))
		Expect(err).NotTo(HaveOccurred())
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		c.Close()

		h := helloOf(cfg, f)
		Expect(h.Extensions).NotTo(BeEmpty())
		// JA3: TLS 1.2's legacy version (771), then the lists in order.
		ja3 := fmt.Sprintf("771,%s,%s,%s,%s", joinDec(h.CipherSuites), joinDec(h.Extensions), joinDec(h.SupportedCurves), joinDec(h.SupportedPoints))
		sum := md5.Sum([]byte(ja3))
		wantJA3 := hex.EncodeToString(sum[:])
		// JA4: t13, an SNI, the counts, "h1" for http/1.1, then the sorted
		// ciphers' and extensions' (less SNI and ALPN) hashes, the
		// signature algorithms in order.
		ciphers := slices.Clone(h.CipherSuites)
		slices.Sort(ciphers)
		var exts []uint16
		for _, e := range h.Extensions {
			if e != 0 && e != 16 {
				exts = append(exts, e)
			}
		}
		slices.Sort(exts)
		hash := func(s string) string { b := sha256.Sum256([]byte(s)); return hex.EncodeToString(b[:])[:12] }
		wantJA4 := fmt.Sprintf("t13d%02d%02dh1_%s_%s", len(h.CipherSuites), len(h.Extensions),
			hash(hex4(ciphers)), hash(hex4(exts)+"_"+hex4(h.SignatureSchemes)))
		Eventually(s.Stdout, 5*time.Second).Should(ContainSubstring("FP "+wantJA3+" "+wantJA4+"\n"), "JA3 string %s", ja3)
	})
})
