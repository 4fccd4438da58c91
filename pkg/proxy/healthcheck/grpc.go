package healthcheck

import (
	"context"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// grpcProber runs grpc.health.v1.Health/Check on one host, over a channel
// of its own (kept between checks with reuse_connection; a failed channel
// is dropped, so that the next check dials at once rather than after the
// channel's back-off).
type grpcProber struct {
	c    *Checker
	addr string
	host *upstream.Host
	// authority is the host's: its health_check_config hostname, else
	// the check's authority, else the cluster's name.
	authority string
	cc        *grpc.ClientConn
}

func (p *grpcProber) probe(ctx context.Context, deadline time.Time) result {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if p.cc == nil {
		cc, err := p.dialChannel()
		if err != nil {
			return result{outcome: outcomeNetwork}
		}
		p.cc = cc
	}
	resp, err := healthpb.NewHealthClient(p.cc).Check(ctx, &healthpb.HealthCheckRequest{Service: p.c.cfg.grpc.service})
	r := result{outcome: outcomeSuccess}
	switch {
	case err != nil:
		r.outcome = outcomeFailed
		switch status.Code(err) {
		case codes.Unavailable, codes.Canceled, codes.DeadlineExceeded, codes.Internal:
			// The stream or the connection broke.
			r.outcome = outcomeNetwork
		}
	case resp.GetStatus() != healthpb.HealthCheckResponse_SERVING:
		r.outcome = outcomeFailed
	}
	if r.outcome != outcomeSuccess || !p.c.cfg.ReuseConnection {
		p.close()
	}
	return r
}

// dialChannel opens the host's channel: the cluster's dialer does TCP
// and TLS, the channel speaks HTTP/2 with :authority set to authority
// (the cluster's name when unset).
func (p *grpcProber) dialChannel() (*grpc.ClientConn, error) {
	alpn := alpnHTTP2
	if len(p.c.cfg.ALPN) > 0 {
		alpn = p.c.cfg.ALPN
	}
	dial := func(ctx context.Context, _ string) (net.Conn, error) { return p.c.env.Dial(ctx, p.host, p.addr, alpn) }
	return grpc.NewClient("passthrough:///"+p.addr,
		grpc.WithContextDialer(dial),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithAuthority(p.authority),
		grpc.WithUserAgent(userAgent),
	)
}

func (p *grpcProber) close() {
	if p.cc != nil {
		_ = p.cc.Close()
		p.cc = nil
	}
}
