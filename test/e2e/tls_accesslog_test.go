package e2e

import (
	"crypto/sha1" //nolint:gosec // the operator under test is SHA-1
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("TLS access log operators", func() {
	It("log the downstream and upstream connections' TLS, certificates and addresses, over HTTP/1.1 and HTTP/2 upstreams", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		up := startTLSUpstream(f, true)
		clientTLS := upstreamTLS(`, common_tls_context: {tls_certificates: [{certificate_chain: {filename: ` + f.clientCert + `}, private_key: {filename: ` + f.clientKey + `}}]}`)
		format := "TLSLOG %REQ(:PATH)% dv=%DOWNSTREAM_TLS_VERSION% pdns=%DOWNSTREAM_PEER_DNS_SAN% pis=%DOWNSTREAM_PEER_ISSUER% " +
			"pfp1=%DOWNSTREAM_PEER_FINGERPRINT_1% ldns=%DOWNSTREAM_LOCAL_DNS_SAN% lip=%DOWNSTREAM_LOCAL_IP_SAN% " +
			"chain=%DOWNSTREAM_PEER_CHAIN_SERIALS% vs=%DOWNSTREAM_PEER_CERT_V_START(%s)% cert=%DOWNSTREAM_PEER_CERT% " +
			"uv=%UPSTREAM_TLS_VERSION% uc=%UPSTREAM_TLS_CIPHER% us=%UPSTREAM_PEER_SUBJECT% ui=%UPSTREAM_PEER_ISSUER% " +
			"uuri=%UPSTREAM_PEER_URI_SAN% udns=%UPSTREAM_PEER_DNS_SAN% lsub=%UPSTREAM_LOCAL_SUBJECT% luri=%UPSTREAM_LOCAL_URI_SAN% " +
			"ve=%UPSTREAM_PEER_CERT_V_END(%Y)% ula=%UPSTREAM_LOCAL_ADDRESS% END"
		port := freePort()
		chain := `{transport_socket: ` + f.transportSocket("", `, validation_context: {trusted_ca: {filename: `+f.ca+`}}`) + `, filters: [` + routingHCM(format, "h1", "h2") + `]}`
		s := Start(dir, tlsBootstrap(port, "", []string{chain},
			tlsCluster("h1", up, clientTLS, ""),
			tlsCluster("h2", up, clientTLS, ", "+unwrapFlow(h2cOptions())),
		), "--file-flush-interval-msec", "50")

		clientCert, err := tls.LoadX509KeyPair(f.clientCert, f.clientKey)
		Expect(err).NotTo(HaveOccurred())
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs: f.caPool, ServerName: "localhost", Certificates: []tls.Certificate{clientCert}, MaxVersion: tls.VersionTLS12}}}
		for _, path := range []string{"h1", "h2"} {
			r := httpDo(client, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/%s", port, path), nil, nil)
			Expect(r.Status).To(Equal(200), r.Body)
		}

		// Expected values, from the certificates the spec made.
		sum := sha1.Sum(f.client.Cert.Raw) //nolint:gosec // see the import
		pemText := strings.NewReplacer("\n", "%0A", " ", "%20", "+", "%2B", "/", "%2F", "=", "%3D").Replace(string(f.client.CertPEM))
		caSubject := "CN=Outrigger test CA,O=Outrigger tests"
		downstream := "dv=TLSv1.2 pdns=- pis=" + caSubject + " pfp1=" + hex.EncodeToString(sum[:]) +
			" ldns=localhost,a.example.com,*.example.com lip=127.0.0.1 chain=" + f.client.Cert.SerialNumber.Text(16) +
			" vs=" + strconv.FormatInt(f.client.Cert.NotBefore.Unix(), 10) + " cert=" + pemText
		upstream := ` uv=TLSv1\.2 uc=ECDHE-ECDSA-[A-Z0-9-]+ us=CN=localhost,O=Outrigger tests ui=` + caSubject +
			` uuri=` + serverSAN + ` udns=localhost,a\.example\.com,\*\.example\.com lsub=CN=frontend,O=Outrigger tests luri=` + clientSAN +
			` ve=(?:` + strconv.Itoa(time.Now().UTC().Year()) + `|` + strconv.Itoa(time.Now().UTC().Year()+1) + `) ula=127\.0\.0\.1:\d+ END`
		for _, path := range []string{"h1", "h2"} {
			Eventually(s.Stdout).Should(MatchRegexp(`TLSLOG /` + path + ` ` + regexp.QuoteMeta(downstream) + upstream + `\n`))
		}
	})
})
