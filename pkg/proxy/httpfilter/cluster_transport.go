package httpfilter

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"
)

// ClusterTransport is an HTTP transport whose connections go to the hosts
// of a cluster, for filters that call an HTTP service (ext_authz's HTTP
// service, jwt_authn's remote JWKS). The cluster is looked up per
// connection, so it may come and go; it speaks HTTP/2 without TLS when
// its protocol options say so. maxIdle bounds the idle connections kept.
func ClusterTransport(svc Services, cluster string, maxIdle int) *http.Transport {
	t := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			cl := svc.Cluster(cluster)
			if cl == nil {
				return nil, fmt.Errorf("unknown cluster %q", cluster)
			}
			return cl.Connect(ctx)
		},
		DisableCompression:  true,
		MaxIdleConnsPerHost: maxIdle,
		IdleConnTimeout:     time.Minute,
	}
	if cl, ok := svc.Cluster(cluster).(interface{ HTTP2() bool }); ok && cl.HTTP2() {
		var p http.Protocols
		p.SetUnencryptedHTTP2(true)
		t.Protocols = &p
	}
	return t
}
