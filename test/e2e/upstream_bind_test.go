package e2e

import (
	"io"
	"net"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("The cluster manager's upstream_bind_config", func() {
	It("binds the connections of every cluster without its own upstream_bind_config", func() {
		// The upstream answers with the address each connection came
		// from.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			host, _, _ := net.SplitHostPort(r.RemoteAddr)
			_, _ = io.WriteString(w, host)
		})}
		go func() { _ = srv.Serve(ln) }()
		DeferCleanup(srv.Close)
		up := ln.Addr().(*net.TCPAddr).Port

		port := freePort()
		Start(newDir(), proxySpec{
			Port:   port,
			Top:    `{cluster_manager: {upstream_bind_config: {source_address: {address: 127.0.0.3, port_value: 0}}}}`,
			Routes: `[{match: {prefix: /own}, route: {cluster: own}}, {match: {prefix: /}, route: {cluster: plain}}]`,
			Clusters: []proxyCluster{
				{Name: "plain", Port: up},
				{Name: "own", Port: up, Extra: `{upstream_bind_config: {source_address: {address: 127.0.0.4, port_value: 0}}}`},
			},
		}.YAML())
		Expect(servedBy(port, 3, "/plain")).To(Equal(map[string]int{"127.0.0.3": 3}))
		// A cluster's own upstream_bind_config wins, as in Envoy.
		Expect(servedBy(port, 3, "/own")).To(Equal(map[string]int{"127.0.0.4": 3}))

		res, _ := validate("bootstrap.yaml", proxySpec{
			Port:     freePort(),
			Top:      `{cluster_manager: {upstream_bind_config: {source_address: {address: not-an-ip, port_value: 0}}}}`,
			Clusters: []proxyCluster{{Name: "plain", Port: up}},
		}.YAML())
		Expect(res.ExitCode).To(Equal(1))
		Expect(res.Stderr).To(ContainSubstring(`cluster_manager.upstream_bind_config.source_address.address: "not-an-ip" is not an IP address`))
	})
})
