//go:build linux && !tcpproxy_goroutines

package tcpproxy

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/outrigger-dev/outrigger/pkg/proxy/epoll"
)

// sweepEvery is how often a loop checks that nobody else closed the
// connections it relays (a removed cluster closes its connections): such a
// close takes a descriptor out of the loop's epoll set without an event.
const sweepEvery = time.Second

// wakeSlot is the epoll data of a loop's eventfd.
const wakeSlot = -1

// evloops are a Proxy's event loops, started on first use: one per
// GOMAXPROCS, a connection going to the loop its number picks.
type evloops struct {
	mu      sync.Mutex
	all     []*evloop
	stopped bool
}

// get returns the loop of connection id, or nil when the proxy is closing
// or a loop cannot be made (the goroutine relay takes the connection).
func (ls *evloops) get(p *Proxy, id uint64) *evloop {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.stopped {
		return nil
	}
	if ls.all == nil {
		ls.all = make([]*evloop, max(runtime.GOMAXPROCS(0), 1))
	}
	i := id % uint64(len(ls.all))
	if ls.all[i] == nil {
		l, err := newEvloop(p)
		if err != nil {
			p.log.Error(err, "tcp proxy event loop; relaying with goroutines")
			ls.stopped = true
			return nil
		}
		ls.all[i] = l
		go l.run()
	}
	return ls.all[i]
}

// stop ends the loops once their relays have ended; the proxy is idle
// then, and takes no new connection.
func (ls *evloops) stop() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.stopped = true
	for _, l := range ls.all {
		if l != nil {
			_ = l.post(func() { l.stopping = true })
		}
	}
}

// evloop relays plain TCP connections on one goroutine: an epoll set of
// its own holds their descriptors (edge-triggered, registered once), and
// the goroutine waits for the set itself through Go's netpoller (the set
// is readable when one of them is ready), so that no thread blocks. A
// ready descriptor gets one read and the bytes one write to the peer: a
// message costs two system calls and no scheduling, where a goroutine per
// direction also reads until EAGAIN (Go's reads cannot tell a drained
// socket otherwise) and parks. A read that does not fill the buffer has
// drained the socket (a stream socket hands over all it holds), so the
// next bytes bring a new edge; one that fills it is read again after the
// batch.
//
// The sockets stay registered in Go's own netpoller too (a descriptor
// may be in several epoll sets), which only notes their readiness while
// nobody waits on them; the loop is the only reader and writer of a
// connection it holds, and reaches its descriptor under the connection's
// reference (RawConn.Control), so that a close from elsewhere can never
// make it use a reused descriptor.
type evloop struct {
	p    *Proxy
	set  *epoll.Set
	wake int               // eventfd: commands are waiting
	evs  []unix.EpollEvent // the batch's events
	// buf takes the reads of directions without a buffer of their own
	// (relaySide.own).
	buf   []byte
	now   time.Time // of the batch being handled
	slots []*relay  // by epoll data
	free  []int32
	// dead are slots freed in this batch, reused after it: an event of
	// the batch may still name them.
	dead  []int32
	gen   uint32
	count int // relays held
	// again are the relays to read again after the batch.
	again []*relay
	spare []*relay
	// stopping: end once no relay is left; broken: the loop cannot
	// wait any more, and closes what is added.
	stopping, broken bool
	sweep            *time.Timer

	mu    sync.Mutex
	cmds  []func() // run on the loop
	woken bool     // the eventfd was written since cmds were taken
	// exited: the descriptors are closed, nothing may be posted.
	exited bool
}

func newEvloop(p *Proxy) (*evloop, error) {
	l := &evloop{p: p, buf: make([]byte, maxChunk)}
	// The loop also runs when relays wait to be read again, without an
	// event.
	set, err := epoll.New("tcp_proxy epoll", 128, func() bool { return len(l.again) > 0 })
	if err != nil {
		return nil, err
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		_ = set.Close()
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: wakeSlot}
	if err := set.Ctl(unix.EPOLL_CTL_ADD, wake, &ev); err != nil {
		_ = set.Close()
		_ = unix.Close(wake)
		return nil, fmt.Errorf("epoll_ctl: %w", err)
	}
	l.set, l.wake = set, wake
	l.sweep = time.AfterFunc(time.Hour, func() { _ = l.post(l.sweepAll) })
	l.sweep.Stop()
	return l, nil
}

// post runs f on the loop, and reports false when the loop has ended.
func (l *evloop) post(f func()) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.exited {
		return false
	}
	l.cmds = append(l.cmds, f)
	if !l.woken {
		// Under the lock: the eventfd stays open while it is held.
		l.woken = true
		one := [8]byte{1}
		_, _ = unix.Write(l.wake, one[:])
	}
	return true
}

// run is the loop's goroutine.
func (l *evloop) run() {
	defer l.close()
	for {
		evs, err := l.set.Wait()
		if err != nil {
			// Cannot happen while the set is open; the connections
			// must not wait for a loop that is gone.
			l.p.log.Error(err, "tcp proxy event loop stopped")
			l.mu.Lock()
			l.exited = true
			cmds := l.cmds
			l.cmds = nil
			l.mu.Unlock()
			l.broken = true
			for _, f := range cmds {
				f() // connections being added are closed
			}
			for _, r := range l.slots {
				if r != nil {
					r.abort()
				}
			}
			return
		}
		l.evs = evs
		l.batch()
		if l.stopping && l.count == 0 {
			return
		}
	}
}

// close releases the loop's descriptors.
func (l *evloop) close() {
	l.mu.Lock()
	l.exited = true
	l.mu.Unlock()
	l.sweep.Stop()
	_ = l.set.Close()
	_ = unix.Close(l.wake)
}

// batch handles the ready list, then the posted commands.
func (l *evloop) batch() {
	l.now = time.Now()
	woken := false
	for _, ev := range l.evs {
		if ev.Fd == wakeSlot {
			woken = true
			continue
		}
		r := l.slots[ev.Fd]
		if r == nil || r.gen != uint32(ev.Pad)>>1 {
			continue // ended earlier in the batch
		}
		l.handle(r, int(ev.Pad&1), ev.Events)
	}
	if woken {
		var b [8]byte
		_, _ = unix.Read(l.wake, b[:])
		l.mu.Lock()
		cmds := l.cmds
		l.cmds = nil
		l.woken = false
		l.mu.Unlock()
		for _, f := range cmds {
			f()
		}
	}
	// Reads that filled the buffer go on, once per batch each, so that
	// one busy connection cannot hold up the others.
	again := l.again
	l.again = l.spare[:0]
	for _, r := range again {
		r.again = false
		if !r.ended {
			l.run1(r)
		}
	}
	l.spare = again[:0]
	l.free = append(l.free, l.dead...)
	l.dead = l.dead[:0]
}

// handle runs the events of one side of a relay; a panic costs that
// connection, not the proxy.
func (l *evloop) handle(r *relay, side int, events uint32) {
	defer l.catch(r)
	r.handle(side, events)
}

// run1 moves what a relay can move.
func (l *evloop) run1(r *relay) {
	defer l.catch(r)
	r.progress()
}

// check1 ends a relay whose connections were closed from elsewhere.
func (l *evloop) check1(r *relay) {
	defer l.catch(r)
	r.check()
}

// catch, deferred, ends the relay whose handling panicked.
func (l *evloop) catch(r *relay) {
	if v := recover(); v != nil {
		l.p.log.Error(fmt.Errorf("panic: %v", v), "tcp proxy event loop panicked", "stack", string(debug.Stack()))
		r.abort()
	}
}

// add starts relaying r.
func (l *evloop) add(r *relay) {
	defer l.catch(r)
	if l.broken {
		r.abort()
		return
	}
	var slot int32
	if n := len(l.free); n > 0 {
		slot = l.free[n-1]
		l.free = l.free[:n-1]
	} else {
		slot = int32(len(l.slots))
		l.slots = append(l.slots, nil)
	}
	l.gen = (l.gen + 1) & (1<<31 - 1)
	r.slot, r.gen = slot, l.gen
	l.slots[slot] = r
	if l.count == 0 {
		l.sweep.Reset(sweepEvery)
	}
	l.count++
	r.begin()
}

// remove forgets an ended relay.
func (l *evloop) remove(r *relay) {
	l.slots[r.slot] = nil
	l.dead = append(l.dead, r.slot)
	l.count--
	if l.count == 0 {
		l.sweep.Stop()
	}
}

// ctl adds one side of a relay to the set (edge-triggered, for reading
// and writing) or takes it out; fd is the side's descriptor, under its
// connection's reference.
func (l *evloop) ctl(r *relay, side int, fd int, op int) error {
	ev := unix.EpollEvent{
		Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET,
		Fd:     r.slot,
		Pad:    int32(r.gen<<1 | uint32(side)),
	}
	err := l.set.Ctl(op, fd, &ev)
	if op == unix.EPOLL_CTL_DEL && errors.Is(err, unix.ENOENT) {
		err = nil
	}
	return err
}

// sweepAll ends the relays whose connections were closed by someone else.
func (l *evloop) sweepAll() {
	for _, r := range l.slots {
		if r != nil {
			l.check1(r)
		}
	}
	if l.count > 0 {
		l.sweep.Reset(sweepEvery)
	}
}
