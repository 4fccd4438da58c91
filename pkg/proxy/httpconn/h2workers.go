package httpconn

import "sync"

// maxIdleStreamWorkers bounds the stream goroutines an HTTP/2 connection
// keeps waiting for its next stream: enough for a client's usual batch of
// streams in flight, few enough that an idle connection holds little
// (a waiting goroutine's stack, which the garbage collector shrinks).
const maxIdleStreamWorkers = 8

// h2Workers reuses an HTTP/2 connection's stream goroutines. A stream's
// request path (filters, routing, the upstream exchange) needs more stack
// than a new goroutine starts with, so a goroutine per stream pays for a
// stack copy on every request (over a microsecond of CPU on the h2c
// benchmark); a goroutine that finished its stream instead waits for the
// connection's next one, keeping its grown stack. At most
// maxIdleStreamWorkers wait, and none outlives the connection (see stop).
type h2Workers struct {
	// work hands a stream to a waiting goroutine; unbuffered, so that a
	// send succeeds only if one waits.
	work chan *h2Stream
	// idle holds a token per waiting goroutine, which bounds them.
	idle chan struct{}
	// quit, closed by stop, sends the waiting goroutines away.
	quit chan struct{}
	// running counts the goroutines, waiting or not.
	running sync.WaitGroup
}

// init readies w for a new connection.
func (w *h2Workers) init() {
	w.work = make(chan *h2Stream)
	w.idle = make(chan struct{}, maxIdleStreamWorkers)
	w.quit = make(chan struct{})
}

// start runs st in a waiting goroutine, or in a new one when none waits.
// Only the connection's read loop calls it.
func (w *h2Workers) start(st *h2Stream) {
	select {
	case w.work <- st:
	default:
		w.running.Add(1)
		go w.serve(st)
	}
}

// serve runs st, then each stream handed over, while it may wait.
func (w *h2Workers) serve(st *h2Stream) {
	defer w.running.Done()
	for {
		st.run()
		select {
		case w.idle <- struct{}{}:
		default:
			// Enough wait already.
			return
		}
		select {
		case st = <-w.work:
			<-w.idle
		case <-w.quit:
			<-w.idle
			return
		}
	}
}

// stop ends the waiting goroutines and waits for every one to return;
// called once the connection's streams are all done, after the last
// start.
func (w *h2Workers) stop() {
	close(w.quit)
	w.running.Wait()
}
