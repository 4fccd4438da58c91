package healthcheck

import (
	"context"
	"net"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
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
	// entry is what initial_metadata's command operators read.
	entry *accesslog.Entry
	cc    *grpc.ClientConn
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
	if md := p.c.cfg.grpc.metadata; !md.Empty() {
		m := metadata.MD{}
		md.Apply(mdEditor(m), p.entry)
		ctx = metadata.NewOutgoingContext(ctx, m)
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

// mdEditor edits a call's metadata as router.HeaderEditor (gRPC keys are
// lower case, as the mutation's names are).
type mdEditor metadata.MD

func (m mdEditor) Get(name string) (string, bool) {
	vs, ok := metadata.MD(m)[name]
	if !ok {
		return "", false
	}
	return strings.Join(vs, ","), true
}
func (m mdEditor) Set(name, value string) { metadata.MD(m).Set(name, value) }
func (m mdEditor) Add(name, value string) { metadata.MD(m).Append(name, value) }
func (m mdEditor) Del(name string)        { metadata.MD(m).Delete(name) }

func (p *grpcProber) close() {
	if p.cc != nil {
		_ = p.cc.Close()
		p.cc = nil
	}
}
