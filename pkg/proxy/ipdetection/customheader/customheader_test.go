package customheader

import (
	"net/netip"
	"testing"

	customheaderv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/original_ip_detection/custom_header/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/ipdetection"
)

func TestDetect(t *testing.T) {
	header := func(v string, ok bool) ipdetection.Input {
		return ipdetection.Input{Remote: netip.MustParseAddr("127.0.0.1"), Header: func(name string) (string, bool) {
			if name != "x-real-ip" {
				t.Errorf("asked for %q", name)
			}
			return v, ok
		}}
	}
	for _, tc := range []struct {
		cfg     *customheaderv3.CustomHeaderConfig
		value   string
		present bool
		want    ipdetection.Result
	}{
		{&customheaderv3.CustomHeaderConfig{HeaderName: "X-Real-IP"}, "192.0.2.1", true, ipdetection.Result{Addr: netip.MustParseAddr("192.0.2.1")}},
		{&customheaderv3.CustomHeaderConfig{HeaderName: "x-real-ip", AllowExtensionToSetAddressAsTrusted: true}, "2001:db8::1", true, ipdetection.Result{Addr: netip.MustParseAddr("2001:db8::1"), Trusted: true}},
		{&customheaderv3.CustomHeaderConfig{HeaderName: "x-real-ip"}, "", false, ipdetection.Result{}},
		{&customheaderv3.CustomHeaderConfig{HeaderName: "x-real-ip", RejectWithStatus: &typev3.HttpStatus{Code: typev3.StatusCode_Unauthorized}}, "", false, ipdetection.Result{RejectStatus: 401}},
		{&customheaderv3.CustomHeaderConfig{HeaderName: "x-real-ip", RejectWithStatus: &typev3.HttpStatus{Code: typev3.StatusCode_OK}}, "not-an-ip", true, ipdetection.Result{RejectStatus: 403}},
		{&customheaderv3.CustomHeaderConfig{HeaderName: "x-real-ip", RejectWithStatus: &typev3.HttpStatus{Code: typev3.StatusCode_Unauthorized}}, "192.0.2.1:8080", true, ipdetection.Result{RejectStatus: 401}},
	} {
		d, err := Factory{}.Compile(tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Detect(header(tc.value, tc.present)); got != tc.want {
			t.Errorf("%v, %q: %+v, want %+v", tc.cfg, tc.value, got, tc.want)
		}
	}
	if _, err := (Factory{}).Compile(&customheaderv3.CustomHeaderConfig{}); err == nil {
		t.Error("an empty header_name compiled")
	}
}
