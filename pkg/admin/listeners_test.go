package admin

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// fakeListenerSource answers /listeners with a fixed message.
type fakeListenerSource struct {
	rec *recorder
	ls  *adminv3.Listeners
}

func (f fakeListenerSource) Listeners() *adminv3.Listeners {
	f.rec.add("Listeners.Listeners")
	return f.ls
}

// fakeDrainControl records the drains it is asked for.
type fakeDrainControl struct {
	rec *recorder
	err error
}

func (f fakeDrainControl) DrainListeners(o DrainOptions) error {
	f.rec.add("Drain.DrainListeners inboundonly=%t graceful=%t skip_exit=%t", o.InboundOnly, o.Graceful, o.SkipExit)
	return f.err
}

func socketAddr(ip string, port uint32) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address: ip, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
	}}}
}

// twoListeners is an IPv4 listener and a dual-address one, the second of
// them IPv6.
func twoListeners() *adminv3.Listeners {
	return &adminv3.Listeners{ListenerStatuses: []*adminv3.ListenerStatus{
		{Name: "ingress", LocalAddress: socketAddr("0.0.0.0", 10000)},
		{Name: "egress", LocalAddress: socketAddr("127.0.0.1", 38517),
			AdditionalLocalAddresses: []*corev3.Address{socketAddr("::1", 38518)}},
	}}
}

// listenerCase is one request to /listeners or /drain_listeners.
type listenerCase struct {
	listeners *adminv3.Listeners
	drainErr  error
	req       request
	calls     []string
}

// runListenerCases runs cases on admins wired to the listener fakes; the
// golden file of case "x" of family "f" is testdata/f-x.golden.
func runListenerCases(t *testing.T, family string, cases map[string]listenerCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rec := &recorder{}
			ta := newTestAdmin(t, func(o *Options) {
				o.Listeners = fakeListenerSource{rec: rec, ls: tc.listeners}
				o.Drain = fakeDrainControl{rec: rec, err: tc.drainErr}
			})
			resp := serve(t, ta.Handler(), tc.req)
			checkResponseGolden(t, family+"-"+name, resp)
			if got := rec.take(); !slices.Equal(got, tc.calls) {
				t.Errorf("calls = %q, want %q", got, tc.calls)
			}
		})
	}
}

func TestListenersEndpoint(t *testing.T) {
	calls := []string{"Listeners.Listeners"}
	runListenerCases(t, "listeners", map[string]listenerCase{
		"text":              {listeners: twoListeners(), req: request{target: "/listeners"}, calls: calls},
		"text-explicit":     {listeners: twoListeners(), req: request{target: "/listeners?format=text"}, calls: calls},
		"text-empty-format": {listeners: twoListeners(), req: request{target: "/listeners?format="}, calls: calls},
		"unknown-format":    {listeners: twoListeners(), req: request{target: "/listeners?format=yaml"}, calls: calls},
		"json":              {listeners: twoListeners(), req: request{target: "/listeners?format=json"}, calls: calls},
		"json-post":         {listeners: twoListeners(), req: request{method: http.MethodPost, target: "/listeners?format=json"}, calls: calls},
		"none-text":         {listeners: &adminv3.Listeners{}, req: request{target: "/listeners"}, calls: calls},
		"none-json":         {listeners: &adminv3.Listeners{}, req: request{target: "/listeners?format=json"}, calls: calls},
		"nil-json":          {req: request{target: "/listeners?format=json"}, calls: calls},
	})
}

func TestDrainListenersEndpoint(t *testing.T) {
	drain := func(inbound, graceful, skip bool) []string {
		return []string{fmt.Sprintf("Drain.DrainListeners inboundonly=%t graceful=%t skip_exit=%t", inbound, graceful, skip)}
	}
	runListenerCases(t, "drain", map[string]listenerCase{
		"all":                   {req: request{method: http.MethodPost, target: "/drain_listeners"}, calls: drain(false, false, false)},
		"inbound-graceful":      {req: request{method: http.MethodPost, target: "/drain_listeners?inboundonly&graceful"}, calls: drain(true, true, false)},
		"graceful-skip-exit":    {req: request{method: http.MethodPost, target: "/drain_listeners?graceful&skip_exit"}, calls: drain(false, true, true)},
		"presence-flags":        {req: request{method: http.MethodPost, target: "/drain_listeners?graceful=false&inboundonly=0"}, calls: drain(true, true, false)},
		"form-body":             {req: request{method: http.MethodPost, target: "/drain_listeners", body: "graceful=on&inboundonly=on", header: formHeader()}, calls: drain(true, true, false)},
		"get-refused":           {req: request{target: "/drain_listeners?graceful"}},
		"refused-by-server":     {drainErr: errors.New("skip_exit requires graceful"), req: request{method: http.MethodPost, target: "/drain_listeners?skip_exit"}, calls: drain(false, false, true)},
		"unknown-param-ignored": {req: request{method: http.MethodPost, target: "/drain_listeners?bogus=1"}, calls: drain(false, false, false)},
		"put-refused":           {req: request{method: http.MethodPut, target: "/drain_listeners"}},
		"head-refused":          {req: request{method: http.MethodHead, target: "/drain_listeners"}},
		"inbound-only":          {req: request{method: http.MethodPost, target: "/drain_listeners?inboundonly"}, calls: drain(true, false, false)},
	})
}

func TestListenerRoutesNeedTheirSources(t *testing.T) {
	ta := newTestAdmin(t)
	for _, path := range []string{"/listeners", "/drain_listeners"} {
		if rec := serve(t, ta.Handler(), request{method: http.MethodPost, target: path}); rec.Code != http.StatusNotFound {
			t.Errorf("%s without its source = %d, want 404", path, rec.Code)
		}
	}
}

func TestListenerRoutesHelp(t *testing.T) {
	rec := &recorder{}
	ta := newTestAdmin(t, func(o *Options) {
		*o = Options{Log: o.Log, Listeners: fakeListenerSource{rec: rec}, Drain: fakeDrainControl{rec: rec}}
	})
	checkResponseGolden(t, "listeners-help", serve(t, ta.Handler(), request{target: "/help"}))
}
