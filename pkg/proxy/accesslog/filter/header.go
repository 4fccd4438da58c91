package filter

import (
	"errors"
	"fmt"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// header matches the request headers with a route's header matcher.
type header struct {
	m router.HeaderMatch
}

func compileHeader(c *accesslogv3.HeaderFilter) (*header, error) {
	if c.GetHeader() == nil {
		return nil, errors.New("header: required")
	}
	m, err := router.CompileHeader(c.GetHeader())
	if err != nil {
		return nil, fmt.Errorf("header.%w", err)
	}
	return &header{m: m}, nil
}

func (h *header) Match(e *accesslog.Entry) bool {
	req := router.Request{Host: e.Authority, Path: e.Path, Method: e.Method, Scheme: e.Scheme, Headers: e.RequestHeaders}
	return h.m.Matches(&req)
}
