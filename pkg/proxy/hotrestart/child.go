package hotrestart

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"
)

// Child is the connection of a process started with --restart-epoch N > 0
// to its parent.
type Child struct {
	mu   sync.Mutex
	conn *net.UnixConn
	// ParentVersion, OriginalStart and ParentGeneration come from the
	// parent's hello.
	OriginalStart    time.Time
	ParentGeneration uint64
}

// VersionMismatchError is a parent whose hot-restart version differs.
type VersionMismatchError struct{ Parent, Child string }

func (e *VersionMismatchError) Error() string {
	return fmt.Sprintf("hot restart compatibility version mismatch: the parent process has %q, this process %q; a hot restart needs the same --max-obj-name-len, --max-stats and hot restart setting", e.Parent, e.Child)
}

// Connect dials the parent's socket name and checks its version.
func Connect(name, version string) (*Child, error) {
	c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: name, Net: "unixpacket"})
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) {
			err = errNoParent
		}
		return nil, fmt.Errorf("unable to connect to the parent's hot-restart socket %s: %w", name, err)
	}
	ch := &Child{conn: c}
	var r reply
	if err := ch.call(request{Kind: kindHello, Version: version}, &r); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("hot-restart socket %s: %w", name, err)
	}
	if r.Version != version {
		_ = c.Close()
		return nil, &VersionMismatchError{Parent: r.Version, Child: version}
	}
	ch.OriginalStart = time.Unix(0, r.OriginalStart)
	ch.ParentGeneration = r.Generation
	return ch, nil
}

// call sends req and reads one reply; it returns the reply's error.
func (ch *Child) call(req request, r *reply) error {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.callLocked(req, r)
}

func (ch *Child) callLocked(req request, r *reply) error {
	if ch.conn == nil {
		return errors.New("the parent has exited")
	}
	_ = ch.conn.SetDeadline(time.Now().Add(30 * time.Second))
	if err := send(ch.conn, req, nil); err != nil {
		return err
	}
	files, err := receive(ch.conn, r)
	closeFiles(files)
	if err != nil {
		return err
	}
	if r.Error != "" {
		return errors.New(r.Error)
	}
	return nil
}

// ShutdownAdmin asks the parent to close its admin listener.
func (ch *Child) ShutdownAdmin() error {
	return ch.call(request{Kind: kindShutdownAdmin}, &reply{})
}

// ListenSockets asks the parent for its n sockets bound to address; nil
// (and no error) when the parent has none or not n.
func (ch *Child) ListenSockets(network, address string, n int) ([]net.Listener, error) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.conn == nil {
		return nil, nil
	}
	_ = ch.conn.SetDeadline(time.Now().Add(30 * time.Second))
	if err := send(ch.conn, request{Kind: kindListenSocket, Network: network, Address: address, Count: n}, nil); err != nil {
		return nil, err
	}
	var r reply
	files, err := receive(ch.conn, &r)
	defer closeFiles(files)
	if err != nil {
		return nil, err
	}
	if len(files) != n {
		return nil, nil
	}
	var out []net.Listener
	for _, f := range files {
		ln, err := net.FileListener(f)
		if err != nil {
			for _, l := range out {
				_ = l.Close()
			}
			return nil, fmt.Errorf("socket passed by the parent for %s: %w", address, err)
		}
		out = append(out, ln)
	}
	return out, nil
}

// Stats returns the parent's counters and gauges.
func (ch *Child) Stats() (map[string]uint64, map[string]int64, error) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.conn == nil {
		return nil, nil, errors.New("the parent has exited")
	}
	_ = ch.conn.SetDeadline(time.Now().Add(30 * time.Second))
	if err := send(ch.conn, request{Kind: kindStats}, nil); err != nil {
		return nil, nil, err
	}
	counters, gauges := map[string]uint64{}, map[string]int64{}
	for {
		var r reply
		files, err := receive(ch.conn, &r)
		closeFiles(files)
		if err != nil {
			return nil, nil, err
		}
		for k, v := range r.Counters {
			counters[k] = v
		}
		for k, v := range r.Gauges {
			gauges[k] = v
		}
		if r.Done {
			return counters, gauges, nil
		}
	}
}

// DrainParent tells the parent to stop accepting and drain.
func (ch *Child) DrainParent() error {
	return ch.call(request{Kind: kindDrainListeners}, &reply{})
}

// TerminateParent tells the parent to exit and closes the connection.
func (ch *Child) TerminateParent() error {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.conn == nil {
		return nil
	}
	err := ch.callLocked(request{Kind: kindTerminate}, &reply{})
	_ = ch.conn.Close()
	ch.conn = nil
	return err
}

// Close drops the connection without terminating the parent.
func (ch *Child) Close() {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.conn != nil {
		_ = ch.conn.Close()
		ch.conn = nil
	}
}
