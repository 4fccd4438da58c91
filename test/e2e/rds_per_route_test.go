package e2e

import (
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/composite/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
)

// connCounting is a listener that counts the connections it accepted
// that are still open (closed by the server once the peer has closed).
type connCounting struct {
	net.Listener
	open, accepted atomic.Int64
}

func (l *connCounting) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.open.Add(1)
	l.accepted.Add(1)
	return &countedConn{Conn: c, l: l}, nil
}

// countedConn is a connection of connCounting.
type countedConn struct {
	net.Conn
	l    *connCounting
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}

// startCountedAuthz serves the gRPC Authorization service (see
// authzServer) on a loopback port, counting its connections.
func startCountedAuthz() (*connCounting, int) {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	cl := &connCounting{Listener: ln}
	srv := grpc.NewServer()
	authv3.RegisterAuthorizationServer(srv, &authzServer{})
	go func() { _ = srv.Serve(cl) }()
	DeferCleanup(srv.Stop)
	return cl, ln.Addr().(*net.TCPAddr).Port
}

// compositeRDSChain is rdsChain with a composite filter, without a
// matcher of its own, before the router.
func compositeRDSChain(prefix, name string) string {
	return `{filters: [{name: envoy.filters.network.http_connection_manager, typed_config: {` +
		`"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager, stat_prefix: ` + prefix + `, ` +
		`rds: {route_config_name: ` + name + `, config_source: {ads: {}, resource_api_version: V3}}, ` +
		`http_filters: [{name: composite, typed_config: {"@type": ` + compositeType + `}}, ` +
		`{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]}}]}`
}

var _ = Describe("RDS: per-route filter configurations that hold resources", func() {
	It("closes a replaced route configuration's CompositePerRoute filters (an ext_authz gRPC channel) once, after the last request that used it ends", func() {
		// The upstream holds /hold until released.
		release := make(chan struct{})
		var releaseOnce sync.Once
		up, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		holding := make(chan struct{}, 1)
		upSrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/hold" {
				holding <- struct{}{}
				select {
				case <-release:
				case <-time.After(20 * time.Second):
				}
			}
			_, _ = w.Write([]byte("up"))
		})}
		go func() { _ = upSrv.Serve(up) }()
		DeferCleanup(upSrv.Close)
		authz, authzPort := startCountedAuthz()

		m := startManagementServer()
		ls := []*listenerv3.Listener{listenerProto(listenerDef{Name: "ingress", Chains: []string{compositeRDSChain("ingress_rds", "routes")}})}
		cs := []*clusterv3.Cluster{clusterProto("up", up.Addr().(*net.TCPAddr).Port, ""), clusterProto("authz_grpc", authzPort, h2cOptions())}
		// The virtual host's CompositePerRoute delegates every request
		// to ext_authz, whose gRPC channel holds a connection.
		withAuthz := `[{name: all, domains: ["*"], typed_per_filter_config: {composite: ` +
			withType(compositePerRouteType, `{matcher: {on_no_match: `+delegateTo("type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthz", `{`+grpcAuthzFilter("")+`}`)+`}}`) +
			`}, routes: [{match: {prefix: "/"}, route: {cluster: up}}]}]`
		m.set(routesSnapshot("v1", ls, cs, []*routev3.RouteConfiguration{routeConfigProto("routes", withAuthz)}))
		s := Launch(newDir(), "bootstrap.yaml", cdsBootstrap(m.port))
		DeferCleanup(func() { releaseOnce.Do(func() { close(release) }) })
		s.WaitForAdmin()
		waitLive(s)
		addr := listenerAddr(s, "ingress")
		client := &http.Client{Timeout: 20 * time.Second}

		// A request goes through ext_authz: its channel connects.
		Expect(httpDo(client, http.MethodGet, "http://"+addr+"/", nil, nil).Body).To(Equal("up"))
		Expect(authz.open.Load()).To(Equal(int64(1)))

		// A request in flight on the first table.
		held := make(chan Response, 1)
		go func() {
			defer GinkgoRecover()
			held <- httpDo(client, http.MethodGet, "http://"+addr+"/hold", nil, nil)
		}()
		Eventually(holding, 10*time.Second).Should(Receive())

		// The route configuration changes: the new one has no ext_authz.
		m.set(routesSnapshot("v2", ls, cs, []*routev3.RouteConfiguration{routeConfigProto("routes", allTo("up"))}))
		waitStat(s, "http.ingress_rds.rds.routes.version_text", `"v2"`)
		Expect(httpDo(client, http.MethodGet, "http://"+addr+"/", nil, nil).Body).To(Equal("up"))
		// The request in flight still holds the old table: its filters
		// stay open.
		Consistently(authz.open.Load, "500ms").Should(Equal(int64(1)))

		releaseOnce.Do(func() { close(release) })
		var r Response
		Eventually(held, 10*time.Second).Should(Receive(&r))
		Expect(r.Body).To(Equal("up"))
		// Once it has ended, the old table's ext_authz channel closes.
		Eventually(authz.open.Load, 10*time.Second).Should(Equal(int64(0)))
		Expect(authz.accepted.Load()).To(Equal(int64(1)))
	})
})
