package hotrestart

import (
	"errors"
	"net"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// Host is what the parent side needs from the running server.
type Host interface {
	// ListenSockets returns duplicates of the n listening sockets bound
	// to address (as the listener configuration names it, "127.0.0.1:80")
	// on network, nil when none is.
	ListenSockets(network, address string, n int) []*os.File
	// ShutdownAdmin closes the admin listener, so the child can bind it.
	ShutdownAdmin()
	// Stats returns the counters and the gauges to carry over.
	Stats() (counters map[string]uint64, gauges map[string]int64)
	// DrainListeners stops accepting and starts the listeners' drain.
	DrainListeners()
	// Terminate makes the process exit cleanly.
	Terminate()
}

// Parent answers the child of the next epoch on the hot-restart socket.
type Parent struct {
	ln            *net.UnixListener
	version       string
	originalStart time.Time
	generation    uint64
	host          Host
	log           logr.Logger
	done          chan struct{}
	closeOnce     sync.Once
}

// ParentConfig describes the running process.
type ParentConfig struct {
	// Name is the socket to listen on (SocketName).
	Name string
	// Mode is --socket-mode, for a filesystem socket.
	Mode uint32
	// Version is this process's hot-restart version.
	Version string
	// OriginalStart is when epoch 0 started (for uptime_all_epochs).
	OriginalStart time.Time
	// Generation is this process's hot-restart generation.
	Generation uint64
}

// Listen binds the hot-restart socket and answers children until Close.
func Listen(cfg ParentConfig, host Host, log logr.Logger) (*Parent, error) {
	ln, err := listen(cfg.Name, cfg.Mode)
	if err != nil {
		return nil, err
	}
	p := &Parent{ln: ln, version: cfg.Version, originalStart: cfg.OriginalStart,
		generation: cfg.Generation, host: host, log: log, done: make(chan struct{})}
	go p.acceptLoop()
	return p, nil
}

// Close stops answering.
func (p *Parent) Close() {
	p.closeOnce.Do(func() {
		close(p.done)
		_ = p.ln.Close()
	})
}

func (p *Parent) acceptLoop() {
	for {
		c, err := p.ln.AcceptUnix()
		if err != nil {
			select {
			case <-p.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			p.log.Error(err, "hot-restart socket accept")
			time.Sleep(100 * time.Millisecond)
			continue
		}
		// One child at a time: a second waits until the first is done.
		p.serve(c)
	}
}

// serve answers one child's requests until it hangs up.
func (p *Parent) serve(c *net.UnixConn) {
	defer c.Close()
	for {
		var req request
		files, err := receive(c, &req)
		closeFiles(files) // a child sends no descriptors
		if err != nil {
			return
		}
		if err := p.answer(c, req); err != nil {
			p.log.Error(err, "hot-restart answer", "request", req.Kind)
			return
		}
	}
}

func (p *Parent) answer(c *net.UnixConn, req request) error {
	switch req.Kind {
	case kindHello:
		p.log.Info("hot restart: a child process connected", "child_version", req.Version)
		return send(c, reply{Version: p.version, OriginalStart: p.originalStart.UnixNano(), Generation: p.generation}, nil)
	case kindShutdownAdmin:
		p.log.Info("hot restart: closing the admin listener for the child")
		p.host.ShutdownAdmin()
		return send(c, reply{}, nil)
	case kindListenSocket:
		files := p.host.ListenSockets(req.Network, req.Address, req.Count)
		defer closeFiles(files)
		fds := make([]int, len(files))
		for i, f := range files {
			fds[i] = int(f.Fd())
		}
		return send(c, reply{}, fds)
	case kindStats:
		counters, gauges := p.host.Stats()
		return sendStats(c, counters, gauges)
	case kindDrainListeners:
		p.log.Info("hot restart: the child serves; this process stops accepting and drains")
		p.host.DrainListeners()
		return send(c, reply{}, nil)
	case kindTerminate:
		p.log.Info("hot restart: the child asked this process to exit")
		err := send(c, reply{}, nil)
		p.host.Terminate()
		return err
	}
	return send(c, reply{Error: "unknown request " + req.Kind}, nil)
}

// sendStats sends the stats in chunks of statsChunk.
func sendStats(c *net.UnixConn, counters map[string]uint64, gauges map[string]int64) error {
	r := reply{Counters: map[string]uint64{}, Gauges: map[string]int64{}}
	flush := func(done bool) error {
		r.Done = done
		err := send(c, r, nil)
		r = reply{Counters: map[string]uint64{}, Gauges: map[string]int64{}}
		return err
	}
	n := 0
	for k, v := range counters {
		r.Counters[k] = v
		if n++; n%statsChunk == 0 {
			if err := flush(false); err != nil {
				return err
			}
		}
	}
	for k, v := range gauges {
		r.Gauges[k] = v
		if n++; n%statsChunk == 0 {
			if err := flush(false); err != nil {
				return err
			}
		}
	}
	return flush(true)
}
