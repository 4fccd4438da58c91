package main

import (
	"github.com/outrigger-dev/outrigger/pkg/admin"
	"github.com/outrigger-dev/outrigger/pkg/proxy/server"
)

var (
	_ admin.ListenerSource = (*server.Server)(nil)
	_ admin.DrainControl   = drainView{}
)

// drainView presents the server's listener drain to /drain_listeners: the
// admin passes its options as one struct, the server takes plain flags.
type drainView struct{ srv *server.Server }

// DrainListeners implements admin.DrainControl.
func (v drainView) DrainListeners(o admin.DrainOptions) error {
	return v.srv.DrainListeners(o.InboundOnly, o.Graceful, o.SkipExit)
}
