package tap

import (
	"testing"
	"time"

	datatapv3 "github.com/envoyproxy/go-control-plane/envoy/data/tap/v3"
)

func TestExtrasApply(t *testing.T) {
	at := time.Unix(1700000000, 5)
	msg := func() *datatapv3.HttpBufferedTrace {
		return &datatapv3.HttpBufferedTrace{Request: &datatapv3.HttpBufferedTrace_Message{}, Response: &datatapv3.HttpBufferedTrace_Message{}}
	}
	x := Extras{RequestHeadersAt: at, ResponseHeadersAt: at.Add(time.Second), Local: "127.0.0.1:8080", Remote: "[::1]:5000"}
	bt := msg()
	x.apply(bt, true, false)
	if !bt.Request.GetHeadersReceivedTime().AsTime().Equal(at) {
		t.Errorf("request time %v", bt.Request.GetHeadersReceivedTime())
	}
	if bt.Response.GetHeadersReceivedTime() != nil {
		t.Error("a response time without response headers")
	}
	c := bt.GetDownstreamConnection()
	if l := c.GetLocalAddress().GetSocketAddress(); l.GetAddress() != "127.0.0.1" || l.GetPortValue() != 8080 {
		t.Errorf("local %v", l)
	}
	if r := c.GetRemoteAddress().GetSocketAddress(); r.GetAddress() != "::1" || r.GetPortValue() != 5000 {
		t.Errorf("remote %v", r)
	}
	// Nothing recorded, nothing added; an address that is not ip:port
	// leaves the connection out.
	bt = msg()
	(&Extras{Local: "pipe", Remote: "127.0.0.1:1"}).apply(bt, true, true)
	if bt.Request.HeadersReceivedTime != nil || bt.Response.HeadersReceivedTime != nil || bt.DownstreamConnection != nil {
		t.Errorf("added %v", bt)
	}
}
