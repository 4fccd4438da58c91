package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

// meshCertificate is what the spec reads of a cert-manager Certificate.
type meshCertificate struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		SecretName string   `json:"secretName"`
		IsCA       bool     `json:"isCA"`
		URIs       []string `json:"uris"`
		DNSNames   []string `json:"dnsNames"`
		Usages     []string `json:"usages"`
	} `json:"spec"`
}

// meshExample is examples/mesh-tls: the bootstrap of each ConfigMap (by
// its name), the workload Certificates (by Secret name), the Deployments.
type meshExample struct {
	bootstraps  map[string]string
	certs       map[string]meshCertificate
	deployments []appsv1.Deployment
	files       map[string]string // file name -> content
}

// yamlDocuments splits a file of several YAML documents.
func yamlDocuments(content string) []string {
	return strings.Split(content, "\n---\n")
}

func readMeshExample() meshExample {
	GinkgoHelper()
	dir := filepath.Join(examplesDir, "mesh-tls")
	ex := meshExample{bootstraps: map[string]string{}, certs: map[string]meshCertificate{}, files: map[string]string{}}
	for _, name := range []string{"frontend-bootstrap.yaml", "backend-bootstrap.yaml", "certificates.yaml", "workloads.yaml"} {
		ex.files[name] = readFile(filepath.Join(dir, name))
	}
	for _, name := range []string{"frontend-bootstrap.yaml", "backend-bootstrap.yaml"} {
		var cm corev1.ConfigMap
		Expect(yaml.UnmarshalStrict([]byte(ex.files[name]), &cm)).To(Succeed(), name)
		b, ok := cm.Data["bootstrap.yaml"]
		Expect(ok).To(BeTrue(), "%s has no bootstrap.yaml key", name)
		ex.bootstraps[cm.Name] = b
	}
	for _, doc := range yamlDocuments(ex.files["certificates.yaml"]) {
		var c meshCertificate
		Expect(yaml.Unmarshal([]byte(doc), &c)).To(Succeed())
		if c.Kind == "Certificate" && !c.Spec.IsCA {
			ex.certs[c.Spec.SecretName] = c
		}
	}
	for _, doc := range yamlDocuments(ex.files["workloads.yaml"]) {
		var kind struct {
			Kind string `json:"kind"`
		}
		Expect(yaml.Unmarshal([]byte(doc), &kind)).To(Succeed())
		if kind.Kind == "Deployment" {
			var d appsv1.Deployment
			Expect(yaml.UnmarshalStrict([]byte(doc), &d)).To(Succeed())
			ex.deployments = append(ex.deployments, d)
		}
	}
	Expect(ex.bootstraps).To(HaveLen(2))
	Expect(ex.certs).To(HaveLen(2))
	Expect(ex.deployments).To(HaveLen(2))
	return ex
}

// writeMeshSecret writes what cert-manager puts in the Secret of a
// Certificate with uris and dnsNames, issued by ca, into the folder dir:
// tls.crt, tls.key, ca.crt.
func writeMeshSecret(dir string, ca *tlstest.CA, uris, dnsNames []string) string {
	GinkgoHelper()
	leaf, err := ca.Issue(tlstest.Options{URIs: uris, DNS: dnsNames,
		ExtKeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}})
	Expect(err).NotTo(HaveOccurred())
	Expect(os.MkdirAll(dir, 0o700)).To(Succeed())
	for name, b := range map[string][]byte{"tls.crt": leaf.CertPEM, "tls.key": leaf.KeyPEM, "ca.crt": ca.PEM} {
		Expect(os.WriteFile(filepath.Join(dir, name), b, 0o600)).To(Succeed())
	}
	return dir
}

// meshPorts are one pod's ports, moved to free loopback ones.
type meshPorts struct{ inbound, admin, probe, app, outbound int }

func newMeshPorts() meshPorts {
	return meshPorts{inbound: freePort(), admin: freePort(), probe: freePort(), app: freePort(), outbound: freePort()}
}

// localize makes a pod's bootstrap run on loopback: its fixed ports move
// to ports, the Secret's mount to secretDir, and the peer Service's
// address to 127.0.0.1:peerPort. Each replaced text must appear as often as
// the example uses it, so that none is left behind.
func localize(bootstrap, secretDir, peerService string, peerPort int, ports meshPorts) string {
	GinkgoHelper()
	replace := func(old, new string, uses int) {
		GinkgoHelper()
		Expect(strings.Count(bootstrap, old)).To(Equal(uses), "%q", old)
		bootstrap = strings.ReplaceAll(bootstrap, old, new)
	}
	replace("/etc/outrigger-tls/", secretDir+"/", 6)
	replace("address: "+peerService+", port_value: 8443 }", fmt.Sprintf("address: 127.0.0.1, port_value: %d }", peerPort), 1)
	for fixed, p := range map[string]struct{ port, uses int }{
		"8443": {ports.inbound, 1}, "9901": {ports.admin, 2}, "9902": {ports.probe, 1}, "8081": {ports.app, 1}, "9001": {ports.outbound, 1},
	} {
		replace("port_value: "+fixed+" }", fmt.Sprintf("port_value: %d }", p.port), p.uses)
	}
	replace("address: 0.0.0.0,", "address: 127.0.0.1,", 2)
	return bootstrap
}

var _ = Describe("The mutual TLS mesh example (examples/mesh-tls)", func() {
	It("ties the Deployments to their bootstraps and Certificates, and docs/chart.md shows its files in full", func() {
		ex := readMeshExample()
		for _, d := range ex.deployments {
			pod := d.Spec.Template
			Expect(pod.Labels).To(HaveKeyWithValue("proxy.outrigger.dev/inject", "true"))
			Expect(ex.bootstraps).To(HaveKey(pod.Annotations["proxy.outrigger.dev/bootstrap-configmap"]), d.Name)
			c, ok := ex.certs[pod.Annotations["proxy.outrigger.dev/tls-secret"]]
			Expect(ok).To(BeTrue(), "%s: its tls-secret is no Certificate's secretName", d.Name)
			// The workload's identity is its service account's SPIFFE ID.
			Expect(c.Spec.URIs).To(Equal([]string{"spiffe://cluster.local/ns/" + d.Namespace + "/sa/" + pod.Spec.ServiceAccountName}))
			Expect(c.Spec.Usages).To(ContainElements("server auth", "client auth"))
			Expect(pod.Spec.Containers[0].Args).To(ContainElement("-listen=127.0.0.1:8081"))
		}
		doc := readFile("../../docs/chart.md")
		for _, name := range []string{"frontend-bootstrap.yaml", "backend-bootstrap.yaml", "certificates.yaml"} {
			Expect(doc).To(ContainSubstring(ex.files[name]), "docs/chart.md does not show examples/mesh-tls/%s as it is", name)
		}
	})

	It("carries requests both ways between two sidecars over mutual TLS with SAN checks, and refuses the wrong peer on either side", func() {
		ex := readMeshExample()
		dir := newDir()
		ca, err := tlstest.NewCA("mesh-ca")
		Expect(err).NotTo(HaveOccurred())
		secret := func(name string) string {
			c := ex.certs[name]
			return writeMeshSecret(filepath.Join(dir, name), ca, c.Spec.URIs, c.Spec.DNSNames)
		}
		front, back := newMeshPorts(), newMeshPorts()
		frontBootstrap := localize(ex.bootstraps["frontend-proxy-bootstrap"], secret("frontend-tls"), "backend.shop.svc.cluster.local", back.inbound, front)
		backBootstrap := localize(ex.bootstraps["backend-proxy-bootstrap"], secret("backend-tls"), "frontend.shop.svc.cluster.local", front.inbound, back)
		serveText(front.app, "hello from the frontend")
		serveText(back.app, "hello from the backend")
		startIn := func(name, bootstrap string) *Sidecar {
			d := filepath.Join(dir, name)
			Expect(os.MkdirAll(d, 0o700)).To(Succeed())
			return Start(d, bootstrap)
		}
		b := startIn("backend", backBootstrap)
		a := startIn("frontend", frontBootstrap)

		// Each app reaches the other through its own proxy's outbound
		// listener; each proxy checked the other's SPIFFE ID.
		Expect(httpDo(&http.Client{Timeout: 10 * time.Second}, http.MethodGet, listenerURL(front.outbound, "/"), nil, nil).Body).To(Equal("hello from the backend"))
		Expect(httpDo(&http.Client{Timeout: 10 * time.Second}, http.MethodGet, listenerURL(back.outbound, "/"), nil, nil).Body).To(Equal("hello from the frontend"))
		Expect(statValue(a, "cluster.backend.ssl.handshake")).To(Equal("1"))
		Expect(statValue(b, "cluster.frontend.ssl.handshake")).To(Equal("1"))
		Expect(statValue(b, fmt.Sprintf("listener.127.0.0.1_%d.ssl.handshake", back.inbound))).To(Equal("1"))
		Expect(statValue(a, fmt.Sprintf("listener.127.0.0.1_%d.ssl.handshake", front.inbound))).To(Equal("1"))

		// Inbound: a client of the mesh CA with another SPIFFE ID is
		// refused at the handshake, and counted.
		intruderDir := writeMeshSecret(filepath.Join(dir, "intruder-tls"), ca, []string{"spiffe://cluster.local/ns/shop/sa/intruder"}, []string{"backend.shop.svc.cluster.local"})
		intruder, err := tls.LoadX509KeyPair(filepath.Join(intruderDir, "tls.crt"), filepath.Join(intruderDir, "tls.key"))
		Expect(err).NotTo(HaveOccurred())
		pool := x509.NewCertPool()
		pool.AddCert(ca.Cert)
		intruderClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs: pool, ServerName: "backend.shop.svc.cluster.local", Certificates: []tls.Certificate{intruder},
		}}}
		_, err = intruderClient.Get(fmt.Sprintf("https://127.0.0.1:%d/", back.inbound))
		Expect(err).To(HaveOccurred())
		Eventually(func() string {
			return statValue(b, fmt.Sprintf("listener.127.0.0.1_%d.ssl.fail_verify_san", back.inbound))
		}).Should(Equal("1"))

		// Outbound: behind the backend's address, a server of the mesh CA
		// with another SPIFFE ID (and even the backend's DNS name) gets no
		// request: the frontend's proxy answers 503 and counts it.
		ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{intruder}})
		Expect(err).NotTo(HaveOccurred())
		impostor := &http.Server{ReadHeaderTimeout: 5 * time.Second, ErrorLog: log.New(io.Discard, "", 0), Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte("impostor"))
		})}
		go func() { _ = impostor.Serve(ln) }()
		DeferCleanup(impostor.Close)
		front2 := newMeshPorts()
		a2 := startIn("frontend2", localize(ex.bootstraps["frontend-proxy-bootstrap"], filepath.Join(dir, "frontend-tls"),
			"backend.shop.svc.cluster.local", ln.Addr().(*net.TCPAddr).Port, front2))
		code, body := fetch(listenerURL(front2.outbound, "/"))
		Expect(code).To(Equal(503))
		Expect(body).NotTo(ContainSubstring("impostor"))
		Expect(statValue(a2, "cluster.backend.ssl.fail_verify_san")).To(Equal("1"))
	})
})
