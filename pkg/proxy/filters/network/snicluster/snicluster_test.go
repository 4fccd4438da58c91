package snicluster

import (
	"net"
	"testing"

	snicv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/sni_cluster/v3"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/filterstate"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
)

// conn is a downstream connection with a server name and filter state.
type conn struct {
	net.Conn
	netfilter.ConnState
	sni string
}

func (c *conn) RequestedServerName() string { return c.sni }
func (c *conn) OnClose(func())              {}

func TestSetsTheClusterFromTheServerName(t *testing.T) {
	f, err := Factory{}.Compile(&snicv3.SniCluster{}, netfilter.Context{})
	if err != nil {
		t.Fatal(err)
	}
	rf := f.(netfilter.ReadFilter)
	named := &conn{sni: "api.test"}
	if r := rf.OnNewConnection(named); r != nil {
		t.Fatalf("refused: %+v", r)
	}
	if v, ok := named.FilterState(netfilter.ClusterStateKey); !ok || v != filterstate.String("api.test") {
		t.Errorf("cluster state %v %v", v, ok)
	}
	anonymous := &conn{}
	if r := rf.OnNewConnection(anonymous); r != nil {
		t.Fatalf("refused: %+v", r)
	}
	if _, ok := anonymous.FilterState(netfilter.ClusterStateKey); ok {
		t.Error("a connection without a server name got a cluster")
	}
	if _, err := (Factory{}).Compile(&emptypb.Empty{}, netfilter.Context{}); err == nil {
		t.Error("another message was accepted")
	}
}
