// Package router is the registry entry of the router HTTP filter
// (envoy.filters.http.router), the terminal filter: the connection manager
// routes and forwards each request itself once the filters before the
// router continued (see package httpconn). Its configuration has no field
// Outrigger implements yet; the support check refuses any that is set.
package router

import (
	"errors"

	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.router"

// Factory builds the router's configuration.
type Factory struct{}

// Compile implements httpfilter.Factory.
func (Factory) Compile(config proto.Message, _ httpfilter.Context) (httpfilter.Config, error) {
	if _, ok := config.(*routerv3.Router); !ok {
		return nil, errors.New("not a Router configuration")
	}
	return terminal{}, nil
}

// terminal marks the end of the filter chain.
type terminal struct{}

// NewFilter implements httpfilter.Config: the router has no filter of its
// own, the connection manager forwards.
func (terminal) NewFilter() httpfilter.Filter { return nil }

// IsTerminal implements httpfilter.Terminal.
func (terminal) IsTerminal() bool { return true }
