package lua

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	luav3 "github.com/envoyproxy/go-control-plane/envoy/extensions/router/cluster_specifiers/lua/v3"
	"github.com/go-logr/logr/funcr"

	"github.com/outrigger-dev/outrigger/pkg/proxy/clusterspecifier"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// headerMap is a request's regular headers, joined as the connection
// manager joins repeated ones.
type headerMap map[string][]string

func (h headerMap) Get(name string) (string, bool) {
	v, ok := h[name]
	return strings.Join(v, ","), ok
}

// logs collects what a plugin logs; safe for concurrent calls.
type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// compile compiles a plugin from its script and default cluster.
func compile(t testing.TB, code, def string) (*plugin, *logs) {
	t.Helper()
	l := &logs{}
	ctx := clusterspecifier.Context{Log: funcr.New(func(_, args string) {
		l.mu.Lock()
		l.lines = append(l.lines, args)
		l.mu.Unlock()
	}, funcr.Options{})}
	cs, err := Factory{}.Compile(&luav3.LuaConfig{
		SourceCode:     &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: code}},
		DefaultCluster: def,
	}, ctx)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return cs.(*plugin), l
}

// request is a GET of path with headers (name, value pairs).
func request(path string, kv ...string) *router.Request {
	h := headerMap{}
	for i := 0; i+1 < len(kv); i += 2 {
		h[kv[i]] = append(h[kv[i]], kv[i+1])
	}
	return &router.Request{Host: "example.com:8080", Path: path, Method: "GET", Scheme: "http", Headers: h}
}

// sandbox is the script of Envoy's lua-cluster-specifier sandbox.
const sandbox = `
function envoy_on_route(route_handle)
  local header_value = route_handle:headers():get("header_key")
  if header_value == "fake" then
    return "fake_cluster"
  end
  return "example_cluster"
end
`

func TestCluster(t *testing.T) {
	tests := map[string]struct {
		code    string
		req     *router.Request
		want    string
		wantLog string
	}{
		"sandbox, header fake":     {code: sandbox, req: request("/", "header_key", "fake"), want: "fake_cluster"},
		"sandbox, header other":    {code: sandbox, req: request("/", "header_key", "x"), want: "example_cluster"},
		"sandbox, no header":       {code: sandbox, req: request("/"), want: "example_cluster"},
		"header name in any case":  {code: `function envoy_on_route(h) return h:headers():get("X-Pick") end`, req: request("/", "x-pick", "blue"), want: "blue"},
		"repeated header joined":   {code: `function envoy_on_route(h) return h:headers():get("x-pick") end`, req: request("/", "x-pick", "a", "x-pick", "b"), want: "a,b"},
		"pseudo-headers":           {code: `function envoy_on_route(h) local m = h:headers() return m:get(":method") .. m:get(":path") .. m:get(":authority") .. m:get(":scheme") end`, req: request("/p?q"), want: "GET/p?qexample.com:8080http"},
		"same header object":       {code: `function envoy_on_route(h) if h:headers() == h:headers() then return "same" end return "other" end`, req: request("/"), want: "same"},
		"number becomes a string":  {code: `function envoy_on_route(h) return 42 end`, req: request("/"), want: "42"},
		"last value returned":      {code: `function envoy_on_route(h) return "first", "last" end`, req: request("/"), want: "last"},
		"empty string is a name":   {code: `function envoy_on_route(h) return "" end`, req: request("/"), want: ""},
		"nil: default":             {code: `function envoy_on_route(h) return nil end`, req: request("/"), want: "def", wantLog: "return value is not string, use default cluster"},
		"nothing returned":         {code: `function envoy_on_route(h) end`, req: request("/"), want: "def", wantLog: "return value is not string, use default cluster"},
		"table: default":           {code: `function envoy_on_route(h) return {} end`, req: request("/"), want: "def", wantLog: "return value is not string"},
		"boolean: default":         {code: `function envoy_on_route(h) return true end`, req: request("/"), want: "def", wantLog: "return value is not string"},
		"error: default":           {code: `function envoy_on_route(h) error("boom") end`, req: request("/"), want: "def", wantLog: "script log: source_code:1: boom, use default cluster"},
		"unknown method: default":  {code: `function envoy_on_route(h) return h:headers():add("a", "b") end`, req: request("/"), want: "def", wantLog: "add is not supported by Outrigger's Lua cluster specifier"},
		"getCluster not supported": {code: `function envoy_on_route(h) return h:getCluster("x") end`, req: request("/"), want: "def", wantLog: "getCluster is not supported"},
		"no io library":            {code: `function envoy_on_route(h) return io.open("/etc/passwd") end`, req: request("/"), want: "def", wantLog: "use default cluster"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p, l := compile(t, tc.code, "def")
			if got := p.Cluster(tc.req); got != tc.want {
				t.Errorf("cluster %q, want %q (log: %s)", got, tc.want, l)
			}
			switch logged := l.String(); {
			case tc.wantLog == "" && logged != "":
				t.Errorf("logged %s", logged)
			case !strings.Contains(logged, tc.wantLog):
				t.Errorf("log %q, want it to contain %q", logged, tc.wantLog)
			}
			// The state went back to the pool for the next request.
			if n := p.free.Idle(); n != 1 {
				t.Errorf("%d idle states, want 1", n)
			}
		})
	}
}

func TestGlobalsLiveInTheState(t *testing.T) {
	p, _ := compile(t, `n = 0
function envoy_on_route(h) n = n + 1 return "c" .. n end`, "")
	for _, want := range []string{"c1", "c2", "c3"} {
		if got := p.Cluster(request("/")); got != want {
			t.Errorf("cluster %q, want %q", got, want)
		}
	}
}

func TestKeptHandleIsRefused(t *testing.T) {
	p, l := compile(t, `function envoy_on_route(h)
  if kept then return kept:headers():get("x") end
  kept = h
  return "first"
end`, "def")
	if got := p.Cluster(request("/", "x", "a")); got != "first" {
		t.Fatalf("cluster %q", got)
	}
	if got := p.Cluster(request("/", "x", "b")); got != "def" {
		t.Errorf("a handle kept from an earlier request gave %q", got)
	}
	if !strings.Contains(l.String(), "object used outside of proper scope") {
		t.Errorf("log %q", l)
	}
}

func TestLoopIsStopped(t *testing.T) {
	p, l := compile(t, `function envoy_on_route(h) while true do end end`, "def")
	p.budget = 20 * time.Millisecond
	if got := p.Cluster(request("/")); got != "def" {
		t.Errorf("cluster %q, want the default", got)
	}
	if !strings.Contains(l.String(), "ran past its time budget") {
		t.Errorf("log %q", l)
	}
	// The stopped state is not reused.
	if n := p.free.Idle(); n != 0 {
		t.Errorf("%d idle states, want 0", n)
	}
}

func TestConcurrentRequests(t *testing.T) {
	p, l := compile(t, `function envoy_on_route(h) return h:headers():get("x") end`, "def")
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := string(rune('a' + i))
			for range 50 {
				if got := p.Cluster(request("/", "x", want)); got != want {
					t.Errorf("cluster %q, want %q", got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	if s := l.String(); s != "" {
		t.Errorf("logged %s", s)
	}
}

func TestCompileErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "route.lua")
	if err := os.WriteFile(file, []byte(`function envoy_on_route(h) return "from-file" end`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		cfg  *luav3.LuaConfig
		want string
	}{
		"no source":       {cfg: &luav3.LuaConfig{}, want: "source_code: a script is required"},
		"syntax error":    {cfg: inline("function envoy_on_route("), want: "source_code: script does not compile"},
		"no entry point":  {cfg: inline("function envoy_on_request(h) end"), want: "source_code: envoy_on_route() function not found. Lua will not hook cluster specifier."},
		"wrong name":      {cfg: inline("function envoy_on_route_cluster(h) end"), want: "envoy_on_route() function not found"},
		"error at load":   {cfg: inline(`error("at load")`), want: "source_code: script load error: source_code:1: at load"},
		"missing file":    {cfg: &luav3.LuaConfig{SourceCode: &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: filepath.Join(dir, "none.lua")}}}, want: "source_code.filename: open"},
		"not a LuaConfig": {cfg: nil, want: "not a LuaConfig"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var err error
			if tc.cfg == nil {
				_, err = Factory{}.Compile(&corev3.DataSource{}, clusterspecifier.Context{})
			} else {
				_, err = Factory{}.Compile(tc.cfg, clusterspecifier.Context{})
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	cs, err := Factory{}.Compile(&luav3.LuaConfig{SourceCode: &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: file}}}, clusterspecifier.Context{})
	if err != nil {
		t.Fatal(err)
	}
	if got := cs.Cluster(request("/")); got != "from-file" {
		t.Errorf("cluster %q from the file's script", got)
	}
}

// inline is a LuaConfig of an inline script.
func inline(code string) *luav3.LuaConfig {
	return &luav3.LuaConfig{SourceCode: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: code}}}
}
