package httpconn

import (
	"sync"
	"sync/atomic"
	"time"
)

// maxIdleStreamWorkers bounds the stream goroutines an HTTP/2 connection
// keeps waiting for its next stream: enough for a client's usual batch of
// streams in flight, few enough that an idle connection holds little
// (a waiting goroutine's stack, which the garbage collector shrinks).
const maxIdleStreamWorkers = 8

// workerLinger is how long a connection's waiting stream goroutines wait
// without a stream before they are sent away: an idle connection then
// holds none of their stacks. A connection busy within the period keeps
// them, so its streams pay no stack copy; one idle for longer pays a
// goroutine's start and stack growth (a few microseconds) for its next
// stream. A busy connection's timer fires four times a second.
const workerLinger = 250 * time.Millisecond

// h2Workers reuses an HTTP/2 connection's stream goroutines. A stream's
// request path (filters, routing, the upstream exchange) needs more stack
// than a new goroutine starts with, so a goroutine per stream pays for a
// stack copy on every request (over a microsecond of CPU on the h2c
// benchmark); a goroutine that finished its stream instead waits for the
// connection's next one, keeping its grown stack. At most
// maxIdleStreamWorkers wait, none once the connection has had no stream
// for workerLinger, and none outlives the connection (see stop).
//
// The hand-off is one channel operation on each side (a goroutine waits
// in a plain receive, which costs less than a select of two channels)
// and the waiting goroutines are counted with an atomic counter rather
// than tokens in a channel: the reader wakes a stream's goroutine for
// every request, so each operation saved there is saved per request.
type h2Workers struct {
	// work hands a stream to a waiting goroutine; unbuffered, so that a
	// send succeeds only if one waits. A nil stream sends it away, and
	// stop closes it, which sends them all away.
	work chan *h2Stream
	// waiting counts the goroutines waiting or on their way to wait,
	// which it bounds.
	waiting atomic.Int32
	// running counts the goroutines, waiting or not.
	running sync.WaitGroup
	// started counts the streams handed over, which the linger timer
	// compares from one period to the next.
	started atomic.Uint64

	// mu guards the linger timer: armed while goroutines may wait,
	// seen the count of streams at its last firing.
	mu      sync.Mutex
	linger  *time.Timer
	armed   bool
	stopped bool
	seen    uint64
}

// init readies w for a new connection.
func (w *h2Workers) init() {
	w.work = make(chan *h2Stream)
}

// start runs st in a waiting goroutine, or in a new one when none waits.
// Only the connection's read loop calls it.
func (w *h2Workers) start(st *h2Stream) {
	w.started.Add(1)
	select {
	case w.work <- st:
	default:
		w.running.Add(1)
		go w.serve(st)
		w.arm()
	}
}

// serve runs st, then each stream handed over, while it may wait.
func (w *h2Workers) serve(st *h2Stream) {
	defer w.running.Done()
	growStreamStack()
	for {
		st.run()
		if w.waiting.Add(1) > maxIdleStreamWorkers {
			// Enough wait already.
			w.waiting.Add(-1)
			return
		}
		st = <-w.work
		w.waiting.Add(-1)
		if st == nil {
			// Sent away: the connection idles, or ended (stop).
			return
		}
	}
}

// arm starts the linger timer unless it runs.
func (w *h2Workers) arm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.armed || w.stopped {
		return
	}
	w.armed = true
	w.seen = w.started.Load()
	if w.linger == nil {
		w.linger = time.AfterFunc(workerLinger, w.expire)
		return
	}
	w.linger.Reset(workerLinger)
}

// expire is the linger timer's firing: when no stream came during the
// period, the waiting goroutines are sent away; the timer runs on while
// goroutines may still wait.
func (w *h2Workers) expire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	if n := w.started.Load(); n != w.seen {
		w.seen = n
		w.linger.Reset(workerLinger)
		return
	}
	for sent := true; sent; {
		select {
		case w.work <- nil:
		default:
			sent = false
		}
	}
	if w.waiting.Load() > 0 {
		// A goroutine is on its way to wait: the next period sends it
		// away.
		w.linger.Reset(workerLinger)
		return
	}
	w.armed = false
}

// stop ends the waiting goroutines and waits for every one to return;
// called once the connection's streams are all done, after the last
// start. The linger timer is stopped first, under mu, so that expire
// sends nothing on the closed channel.
func (w *h2Workers) stop() {
	w.mu.Lock()
	w.stopped = true
	if w.linger != nil {
		w.linger.Stop()
	}
	w.mu.Unlock()
	close(w.work)
	w.running.Wait()
}

// streamStackFrame is the stack frame growStreamStack takes: with the
// little already used, the stack becomes 16 KiB, what a stream's request
// path (router, upstream HTTP/1.1 exchange, response relay) reaches. A
// larger frame would skip a later growth on deeper paths, but every
// stream goroutine would then hold the larger stack: 32 KiB cost 1.1 MiB
// more private memory under the h2c benchmark's 128 streams.
const streamStackFrame = 10 << 10

// growStreamStack grows a new stream goroutine's stack in one copy, while
// it holds two frames. Left to grow on its own, the stack doubles once or
// twice down the request path, each time copying a stack some forty
// frames deep (about 25,000 instructions each: every frame's pointers are
// adjusted through the function tables); a shallow copy costs a few
// hundred, and zeroing the frame about a thousand. Only a new goroutine
// does it: one that waited for its next stream kept its stack (unless a
// collection shrank it meanwhile).
//
//go:noinline
func growStreamStack() {
	var frame [streamStackFrame]byte
	holdFrame(frame[:])
}

// holdFrame keeps growStreamStack's frame from being optimised away.
//
//go:noinline
func holdFrame([]byte) {}
