package extension

import (
	"strings"
	"testing"

	filev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	healthcheckv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/health_check/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/types/known/anypb"
)

const (
	hcmURL    = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
	routerURL = "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"
	fileURL   = "type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog"
)

// testRegistry is a registry of a few real extensions, fresh each call.
func testRegistry(t testing.TB) *Registry {
	t.Helper()
	r, err := New(
		Of("proxy.access_loggers.file", "envoy.access_loggers", &filev3.FileAccessLog{}, nil),
		Of("proxy.filters.http.health_check", "envoy.filters.http", &healthcheckv3.HealthCheck{}, nil),
		Of("proxy.filters.http.router", "envoy.filters.http", &routerv3.Router{}, nil),
		Of("proxy.filters.network.http_connection_manager", "envoy.filters.network", &hcmv3.HttpConnectionManager{}, nil),
	)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestList(t *testing.T) {
	var got []string
	for _, x := range testRegistry(t).List() {
		got = append(got, x.Category+" "+x.Name+" "+strings.Join(x.TypeURLs, ","))
	}
	want := []string{
		"envoy.access_loggers proxy.access_loggers.file " + fileURL,
		"envoy.filters.http proxy.filters.http.health_check type.googleapis.com/envoy.extensions.filters.http.health_check.v3.HealthCheck",
		"envoy.filters.http proxy.filters.http.router " + routerURL,
		"envoy.filters.network proxy.filters.network.http_connection_manager " + hcmURL,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
}

func TestNewRefusesDuplicates(t *testing.T) {
	if _, err := New(
		Of("proxy.filters.http.router", "envoy.filters.http", &routerv3.Router{}, nil),
		Of("envoy.filters.http.router", "envoy.filters.http", &healthcheckv3.HealthCheck{}, nil),
	); err == nil {
		t.Error("two extensions of one name were accepted")
	}
	if _, err := New(
		Of("proxy.filters.http.a", "envoy.filters.http", &routerv3.Router{}, nil),
		Of("proxy.filters.http.b", "envoy.filters.http", &routerv3.Router{}, nil),
	); err == nil {
		t.Error("two extensions of one type were accepted")
	}
}

func TestByName(t *testing.T) {
	r := testRegistry(t)
	tests := map[string]struct {
		category, name, want string
	}{
		"envoy spelling":     {category: "envoy.filters.http", name: "envoy.filters.http.router", want: "proxy.filters.http.router"},
		"proxy spelling":     {category: "envoy.filters.http", name: "proxy.filters.http.health_check", want: "proxy.filters.http.health_check"},
		"proxy category":     {category: "proxy.filters.http", name: "envoy.filters.http.router", want: "proxy.filters.http.router"},
		"another category":   {category: "envoy.filters.network", name: "envoy.filters.http.router"},
		"unknown":            {category: "envoy.filters.http", name: "envoy.filters.http.gzip"},
		"without its prefix": {category: "envoy.filters.http", name: "filters.http.router", want: "proxy.filters.http.router"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			x, ok := r.ByName(tc.category, tc.name)
			if ok != (tc.want != "") || x.Name != tc.want {
				t.Errorf("ByName(%q, %q) = %q, %v; want %q", tc.category, tc.name, x.Name, ok, tc.want)
			}
		})
	}
}

func TestDisable(t *testing.T) {
	tests := map[string]struct {
		names        []string
		wantDisabled []string
		wantWarnings []string
		wantErr      string
	}{
		"envoy spelling": {
			names:        []string{"envoy.filters.http/envoy.filters.http.router"},
			wantDisabled: []string{"proxy.filters.http.router"},
		},
		"proxy spelling": {
			names:        []string{"envoy.filters.network/proxy.filters.network.http_connection_manager"},
			wantDisabled: []string{"proxy.filters.network.http_connection_manager"},
		},
		"proxy category spelling": {
			names:        []string{"proxy.access_loggers/proxy.access_loggers.file"},
			wantDisabled: []string{"proxy.access_loggers.file"},
		},
		"several, with blanks and spaces": {
			names:        []string{" envoy.access_loggers/envoy.access_loggers.file", "", "envoy.filters.http/proxy.filters.http.router "},
			wantDisabled: []string{"proxy.access_loggers.file", "proxy.filters.http.router"},
		},
		"unknown name warns": {
			names:        []string{"envoy.filters.http/envoy.filters.http.gzip", "envoy.filters.http/envoy.filters.http.router"},
			wantDisabled: []string{"proxy.filters.http.router"},
			wantWarnings: []string{"failed to disable invalid extension name 'envoy.filters.http/envoy.filters.http.gzip'"},
		},
		"name in the wrong category warns": {
			names:        []string{"envoy.filters.network/envoy.filters.http.router"},
			wantWarnings: []string{"failed to disable invalid extension name 'envoy.filters.network/envoy.filters.http.router'"},
		},
		"malformed item is an error and disables nothing": {
			names:   []string{"envoy.filters.http/envoy.filters.http.router", "envoy.filters.http.router", "/x", "cat/"},
			wantErr: "invalid --disable-extensions item \"envoy.filters.http.router\": expected <category>/<name>\ninvalid --disable-extensions item \"/x\": expected <category>/<name>\ninvalid --disable-extensions item \"cat/\": expected <category>/<name>",
		},
		"nothing": {},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := testRegistry(t)
			warnings, err := e.Disable(tc.names)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if gotErr != tc.wantErr {
				t.Errorf("error = %q, want %q", gotErr, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantWarnings, warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			var disabled []string
			for _, x := range e.List() {
				if x.Disabled {
					disabled = append(disabled, x.Name)
				}
			}
			if diff := cmp.Diff(tc.wantDisabled, disabled); diff != "" {
				t.Errorf("disabled (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRegistriesIndependent: each registry is a value, so
// disabling in one server (or test) does not leak into another.
func TestRegistriesIndependent(t *testing.T) {
	a := testRegistry(t)
	if _, err := a.Disable([]string{"envoy.filters.http/envoy.filters.http.router"}); err != nil {
		t.Fatal(err)
	}
	x, ok := testRegistry(t).Lookup(routerURL)
	if !ok || x.Disabled {
		t.Errorf("a fresh registry has router %+v (found %v), want it enabled", x, ok)
	}
	if x, _ := a.Lookup(routerURL); !x.Disabled {
		t.Errorf("the registry it was disabled in has router %+v, want disabled", x)
	}
}

// TestListReturnsCopies: callers cannot change the registry through List or
// Lookup results.
func TestListReturnsCopies(t *testing.T) {
	e := testRegistry(t)
	list := e.List()
	list[0].TypeURLs[0] = "changed"
	list[0].Disabled = true
	x, _ := e.Lookup(fileURL)
	x.TypeURLs[0] = "changed too"
	if diff := cmp.Diff(testRegistry(t).List(), e.List(), cmpopts.IgnoreFields(Extension{}, "Config", "Factory")); diff != "" {
		t.Errorf("registry changed through a returned value (-fresh +after):\n%s", diff)
	}
}

func TestLookup(t *testing.T) {
	tests := map[string]struct {
		typeURL string
		want    string // extension name; empty: not found
	}{
		"canonical url":     {typeURL: hcmURL, want: "proxy.filters.network.http_connection_manager"},
		"other url prefix":  {typeURL: "example.com/x/envoy.extensions.filters.http.router.v3.Router", want: "proxy.filters.http.router"},
		"bare message name": {typeURL: "envoy.extensions.access_loggers.file.v3.FileAccessLog", want: "proxy.access_loggers.file"},
		"unregistered":      {typeURL: "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy"},
		"by name, not type": {typeURL: "envoy.filters.http.router"},
		"empty":             {typeURL: ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			x, ok := testRegistry(t).Lookup(tc.typeURL)
			if ok != (tc.want != "") || x.Name != tc.want {
				t.Errorf("Lookup(%q) = %q, %v; want %q", tc.typeURL, x.Name, ok, tc.want)
			}
		})
	}
}

// One config type may select an extension of each of two categories (the
// transport sockets' downstream and upstream factories): Resolve takes the
// one of the category asked for.
func TestOneTypeTwoCategories(t *testing.T) {
	r, err := New(
		Of("proxy.x.file", "envoy.down", &filev3.FileAccessLog{}, "down"),
		Of("proxy.x.file", "envoy.up", &filev3.FileAccessLog{}, "up"),
	)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &anypb.Any{TypeUrl: fileURL}
	for _, category := range []string{"envoy.down", "envoy.up", "proxy.up"} {
		x, _, err := r.Resolve(Ref{Kind: "x", Category: category, Name: "n", Config: cfg}, true)
		if err != nil {
			t.Fatalf("%s: %v", category, err)
		}
		if !sameName(x.Category, category) || x.Factory != strings.TrimPrefix(strings.TrimPrefix(category, "envoy."), "proxy.") {
			t.Errorf("%s: resolved %s (%v)", category, x.Category, x.Factory)
		}
	}
	if _, _, err := r.Resolve(Ref{Kind: "x", Category: "envoy.other", Name: "n", Config: cfg}, true); err == nil {
		t.Error("resolved in a category neither extension has")
	}
	if _, err := New(Of("a", "envoy.down", &filev3.FileAccessLog{}, nil), Of("b", "envoy.down", &filev3.FileAccessLog{}, nil)); err == nil {
		t.Error("one type selecting two extensions of one category was accepted")
	}
}
