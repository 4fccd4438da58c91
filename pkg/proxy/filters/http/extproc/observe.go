package extproc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocsvc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// defaultDeferredClose is Envoy's deferred_close_timeout when none is
// set.
const defaultDeferredClose = 5 * time.Second

// observeQueue bounds the messages waiting to go to a processor in
// observability mode, when it does not keep up: the request never waits
// for it, and a message that does not fit is dropped (and logged), so
// that a slow processor costs bounded memory.
const observeQueue = 64

// observer is one request's stream in observability_mode ("send and
// go"): a goroutine opens the stream and sends the queued messages; the
// processor's answers are read and ignored. Once the filter is destroyed
// the stream stays open until the processor ends it or
// deferred_close_timeout passes, as Envoy defers its closing, so that
// messages still on their way arrive.
type observer struct {
	queue  chan *extprocsvc.ProcessingRequest
	cancel context.CancelFunc
}

// startObserver starts the stream's goroutine.
func (c *config) startObserver(svc *service, md []*corev3.HeaderValue, sp *tracing.CallSpan) *observer {
	ctx, cancel := context.WithCancel(context.Background())
	o := &observer{queue: make(chan *extprocsvc.ProcessingRequest, observeQueue), cancel: cancel}
	c.stats.streamsStarted.Inc()
	go o.run(ctx, cancel, svc, md, sp, c.stats)
	return o
}

// run opens the stream and sends the queue until it is closed, then
// waits for the processor to end the stream, or for ctx's end.
func (o *observer) run(ctx context.Context, cancel context.CancelFunc, svc *service, md []*corev3.HeaderValue, sp *tracing.CallSpan, st filterStats) {
	defer cancel()
	s, err := svc.openStream(ctx, cancel, md, sp)
	if err != nil {
		st.streamsFailed.Inc()
		for range o.queue {
		}
		return
	}
	queue := o.queue
	for {
		select {
		case m, ok := <-queue:
			if !ok {
				// The filter is gone: wait for the processor's end or
				// the deferred close.
				queue = nil
				continue
			}
			s.send(m)
		case <-s.msgs:
			// Answers are ignored in observability mode.
		case <-s.end:
			err := s.endErr
			// A processor that ends the stream, or the deferred close
			// (ctx's end), closes it; anything else failed it.
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				st.streamsClosed.Inc()
			} else {
				st.streamsFailed.Inc()
			}
			s.close()
			go func() {
				for range o.queue {
				}
			}()
			return
		}
	}
}

// finish is the filter's end: nothing more is queued, and the stream is
// closed at the latest after wait.
func (o *observer) finish(wait time.Duration) {
	close(o.queue)
	time.AfterFunc(wait, o.cancel)
}

// observe queues m for the processor without waiting for an answer
// (observability_mode), opening the stream on first use. A body's bytes
// are copied: the caller's buffer is reused once it returns.
func (f *filter) observe(m *extprocsvc.ProcessingRequest) {
	c := f.c
	if f.obs == nil {
		f.obs = c.startObserver(f.svc, f.initialMetadata, f.streamSpan())
	}
	m.ObservabilityMode = true
	m.MetadataContext = f.mdContext
	f.addAttributes(m)
	switch r := m.GetRequest().(type) {
	case *extprocsvc.ProcessingRequest_RequestBody:
		r.RequestBody.Body = bytes.Clone(r.RequestBody.Body)
	case *extprocsvc.ProcessingRequest_ResponseBody:
		r.ResponseBody.Body = bytes.Clone(r.ResponseBody.Body)
	}
	select {
	case f.obs.queue <- m:
		c.stats.msgsSent.Inc()
	default:
		c.log.V(1).Info("ext_proc observability mode: the processor does not keep up, message dropped")
	}
}
