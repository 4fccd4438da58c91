package healthcheck

import (
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// TestTCPProbeProxyProtocol checks proxy_protocol_config: the check's
// bytes start with a v1 header of the check connection's own addresses,
// or a v2 LOCAL header, ahead of send; TLV settings are refused.
func TestTCPProbeProxyProtocol(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, _ := io.ReadAll(io.LimitReader(c, 128))
			got <- fmt.Sprintf("%s|%s", c.RemoteAddr(), b)
			_ = c.Close()
		}
	}()
	tcp := func(version corev3.ProxyProtocolConfig_Version, send string) *Config {
		return compiled(t, healthCheck(func(hc *corev3.HealthCheck) {
			tc := &corev3.HealthCheck_TcpHealthCheck{ProxyProtocolConfig: &corev3.ProxyProtocolConfig{Version: version}}
			if send != "" {
				tc.Send = &corev3.HealthCheck_Payload{Payload: &corev3.HealthCheck_Payload_Binary{Binary: []byte(send)}}
			}
			hc.HealthChecker = &corev3.HealthCheck_TcpHealthCheck_{TcpHealthCheck: tc}
		}), false)
	}
	addr := ln.Addr().String()
	port := ln.Addr().(*net.TCPAddr).Port
	for name, tc := range map[string]struct {
		cfg  *Config
		want func(peer *net.TCPAddr) string
	}{
		"v1 with send": {tcp(corev3.ProxyProtocolConfig_V1, "ping"), func(p *net.TCPAddr) string {
			return fmt.Sprintf("PROXY TCP4 127.0.0.1 127.0.0.1 %d %d\r\nping", p.Port, port)
		}},
		"v1 alone": {tcp(corev3.ProxyProtocolConfig_V1, ""), func(p *net.TCPAddr) string {
			return fmt.Sprintf("PROXY TCP4 127.0.0.1 127.0.0.1 %d %d\r\n", p.Port, port)
		}},
		"v2 LOCAL": {tcp(corev3.ProxyProtocolConfig_V2, "ping"), func(*net.TCPAddr) string {
			return "\r\n\r\n\x00\r\nQUIT\n\x20\x00\x00\x00ping"
		}},
	} {
		if r := probeOnce(t, tc.cfg, addr); r.outcome != outcomeSuccess {
			t.Errorf("%s: %+v", name, r)
			continue
		}
		peer, bytes, _ := strings.Cut(<-got, "|")
		pa, err := net.ResolveTCPAddr("tcp", peer)
		if err != nil {
			t.Fatal(err)
		}
		if want := tc.want(pa); bytes != want {
			t.Errorf("%s: %q, want %q", name, bytes, want)
		}
	}

	_, errs := Compile(healthCheck(func(hc *corev3.HealthCheck) {
		hc.HealthChecker = &corev3.HealthCheck_TcpHealthCheck_{TcpHealthCheck: &corev3.HealthCheck_TcpHealthCheck{ProxyProtocolConfig: &corev3.ProxyProtocolConfig{
			AddedTlvs:       []*corev3.TlvEntry{{Type: 1, Value: []byte("x")}},
			PassThroughTlvs: &corev3.ProxyProtocolPassThroughTLVs{},
		}}}
	}), ClusterInfo{Name: "svc"})
	joined := fmt.Sprint(errs)
	for _, want := range []string{"tcp_health_check.proxy_protocol_config.added_tlvs: a health check's PROXY header carries no TLVs", "tcp_health_check.proxy_protocol_config.pass_through_tlvs:"} {
		if !strings.Contains(joined, want) {
			t.Errorf("errors %s, want %q", joined, want)
		}
	}
}
