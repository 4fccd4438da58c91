package logging

import (
	"sync/atomic"

	"github.com/go-logr/logr"
)

// Gate lets a request path skip a debug record with one atomic load of its
// component's level, without a call through logr's interface:
//
//	if dl, ok := g.Debug(); ok && dl.Enabled() {
//		dl.Info(...)
//	}
//
// Debug answers false only when the record would surely be dropped. In
// fine-grain mode the level belongs to each call site, which only the
// logger's own Enabled, called from that site, can find: the gate then
// always answers true. The zero Gate is a discarding logger's.
type Gate struct {
	log logr.Logger
	// level is the component's level, nil when the logger has to be
	// asked.
	level *atomic.Int32
}

// NewGate returns the gate of l's debug (V(1)) records.
func NewGate(l logr.Logger) Gate {
	g := Gate{log: l}
	if s, ok := l.GetSink().(*sink); ok && l.GetV() == 0 {
		g.level = s.level
	}
	return g
}

// Debug returns the logger's V(1), and false when the component's level is
// above debug.
func (g *Gate) Debug() (logr.Logger, bool) {
	if g.level != nil && Level(g.level.Load()) > LevelDebug {
		return logr.Logger{}, false
	}
	return g.debug(), true
}

func (g *Gate) debug() logr.Logger { return g.log.V(1) }
