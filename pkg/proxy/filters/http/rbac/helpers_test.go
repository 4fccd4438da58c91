package rbac

import (
	"testing"

	httprbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// compileFilter compiles the filter's configuration written in JSON, with
// the connection manager's stat prefix "http.in.".
func compileFilter(t testing.TB, js string) (*filter, *compiled) {
	t.Helper()
	p := &httprbacv3.RBAC{}
	if err := protojson.Unmarshal([]byte(js), p); err != nil {
		t.Fatal(err)
	}
	store := stats.NewStore()
	cfg, err := Factory{}.Compile(p, httpfilter.Context{Name: "rbac", Stats: store, StatPrefix: "http.in."})
	if err != nil {
		t.Fatal(err)
	}
	c := &compiled{filterConfig: cfg.(*filterConfig), store: store}
	return c.NewFilter().(*filter), c
}

// compiled is a compiled filter and the store of its stats.
type compiled struct {
	*filterConfig
	store *stats.Store
}

// compileFilterErr compiles a configuration that should fail, returning
// its error.
func compileFilterErr(js string) (httpfilter.Config, error) {
	p := &httprbacv3.RBAC{}
	if err := protojson.Unmarshal([]byte(js), p); err != nil {
		return nil, err
	}
	return Factory{}.Compile(p, httpfilter.Context{Name: "rbac", Stats: stats.NewStore(), StatPrefix: "http.in."})
}
