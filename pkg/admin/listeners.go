package admin

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// listenersRoutes serves /listeners.
func (a *Admin) listenersRoutes() []Route {
	if a.opts.Listeners == nil {
		return nil
	}
	return []Route{{
		Path: "/listeners",
		Help: "print listener info",
		Params: []Param{
			{Name: "format", Help: "File format to use", Kind: ParamEnum, Values: []string{"text", "json"}},
		},
		Handler: a.handleListeners,
	}}
}

// handleListeners answers the listeners and the addresses they listen on.
// With format=json it is the Listeners message, defaults omitted (no
// listeners: {}); with any other format, as in Envoy, one line
// "<name>::<address>" per listening address.
func (a *Admin) handleListeners(w *Response, r *Request) {
	ls := a.opts.Listeners.Listeners()
	if ls == nil {
		ls = &adminv3.Listeners{}
	}
	if r.Params.Get("format") == "json" {
		w.Proto(ls, false)
		return
	}
	var b strings.Builder
	for _, st := range ls.GetListenerStatuses() {
		addrs := append([]*corev3.Address{st.GetLocalAddress()}, st.GetAdditionalLocalAddresses()...)
		for _, addr := range addrs {
			fmt.Fprintf(&b, "%s::%s\n", st.GetName(), addressText(addr))
		}
	}
	w.Text(http.StatusOK, b.String())
}

// addressText renders an address as Envoy's text outputs do: "ip:port",
// with IPv6 addresses in brackets ("[::1]:80"); an internal address as
// "envoy://listener/endpoint_id", a pipe as its path.
func addressText(a *corev3.Address) string {
	if ia := a.GetEnvoyInternalAddress(); ia != nil {
		return "envoy://" + ia.GetServerListenerName() + "/" + ia.GetEndpointId()
	}
	if p := a.GetPipe(); p != nil {
		return p.GetPath()
	}
	sa := a.GetSocketAddress()
	return net.JoinHostPort(sa.GetAddress(), strconv.FormatUint(uint64(sa.GetPortValue()), 10))
}
