package directresponse

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	drv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/direct_response/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
)

func TestSources(t *testing.T) {
	file := filepath.Join(t.TempDir(), "r")
	if err := os.WriteFile(file, []byte("file"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DR_TEST_VALUE", "env")
	for _, tc := range []struct {
		ds        *corev3.DataSource
		want, err string
	}{
		{&corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: "s"}}, "s", ""},
		{&corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: []byte("b")}}, "b", ""},
		{&corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: file}}, "file", ""},
		{&corev3.DataSource{Specifier: &corev3.DataSource_EnvironmentVariable{EnvironmentVariable: "DR_TEST_VALUE"}}, "env", ""},
		{&corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: file + ".missing"}}, "", "response.filename: "},
		{&corev3.DataSource{Specifier: &corev3.DataSource_EnvironmentVariable{EnvironmentVariable: "DR_TEST_UNSET_VALUE"}}, "", "response.environment_variable: "},
		{nil, "", ""},
	} {
		f, err := Factory{}.Compile(&drv3.Config{Response: tc.ds}, netfilter.Context{})
		if tc.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
				t.Errorf("error %v, want prefix %q", err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		client, server := net.Pipe()
		go f.(*Filter).HandleConn(server)
		got, _ := io.ReadAll(client)
		if string(got) != tc.want {
			t.Errorf("response %q, want %q", got, tc.want)
		}
		if err := f.(*Filter).Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}
}
