package httpconn

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/go-logr/logr"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

func hcmConfig(codec hcmv3.HttpConnectionManager_CodecType) *hcmv3.HttpConnectionManager {
	return &hcmv3.HttpConnectionManager{
		StatPrefix: "test",
		CodecType:  codec,
		RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{
			VirtualHosts: []*routev3.VirtualHost{{Name: "all", Domains: []string{"*"}, Routes: []*routev3.Route{{
				Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/hello"}},
				Action: &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{
					Status: 201, Body: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: "hi\n"}},
				}},
			}}}},
		}},
	}
}

// serve runs the manager behind a real loopback socket and returns its URL.
func serve(t *testing.T, m *Manager) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go m.HandleConn(c)
		}
	}()
	t.Cleanup(func() { ln.Close(); m.Close() })
	return "http://" + ln.Addr().String()
}

func TestDirectResponses(t *testing.T) {
	m, err := New(hcmConfig(hcmv3.HttpConnectionManager_AUTO), Deps{Log: logr.Discard(), Stats: stats.NewStore()})
	if err != nil {
		t.Fatal(err)
	}
	url := serve(t, m)
	client := &http.Client{Timeout: 5 * time.Second}
	tests := map[string]struct {
		path       string
		wantStatus int
		wantBody   string
	}{
		"matched route":   {path: "/hello/world", wantStatus: 201, wantBody: "hi\n"},
		"no route is 404": {path: "/other", wantStatus: 404, wantBody: ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			resp, err := client.Get(url + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantStatus || string(body) != tc.wantBody {
				t.Errorf("GET %s = %d %q, want %d %q", tc.path, resp.StatusCode, body, tc.wantStatus, tc.wantBody)
			}
			if got := resp.Header.Get("server"); got != ServerName {
				t.Errorf("server header = %q, want %q", got, ServerName)
			}
		})
	}
}

func TestH2CPriorKnowledge(t *testing.T) {
	m, err := New(hcmConfig(hcmv3.HttpConnectionManager_AUTO), Deps{Log: logr.Discard(), Stats: stats.NewStore()})
	if err != nil {
		t.Fatal(err)
	}
	url := serve(t, m)
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Protocols: protocols}}
	resp, err := client.Get(url + "/hello")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != 201 {
		t.Fatalf("got %s %d, want HTTP/2 201", resp.Proto, resp.StatusCode)
	}
}

func TestNewErrors(t *testing.T) {
	noRoutes := hcmConfig(hcmv3.HttpConnectionManager_AUTO)
	noRoutes.RouteSpecifier = nil
	http3 := hcmConfig(hcmv3.HttpConnectionManager_HTTP3)
	tests := map[string]struct {
		cfg     *hcmv3.HttpConnectionManager
		wantErr string
	}{
		"no route config": {cfg: noRoutes, wantErr: "route_config: an inline route configuration is required"},
		"http3 codec":     {cfg: http3, wantErr: "codec_type: HTTP3 is not supported"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := New(tc.cfg, Deps{Log: logr.Discard(), Stats: stats.NewStore()})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}
