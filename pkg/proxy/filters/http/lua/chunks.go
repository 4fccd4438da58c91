package lua

import (
	glua "github.com/yuin/gopher-lua"
)

// bodyChunks is the handle's bodyChunks(): an iterator over the body's
// pieces as they arrive, each a buffer object whose setBytes replaces the
// piece; nothing is buffered. On the response, the head is held until
// the first bytes leave, so the script may change the headers until the
// first piece it lets through; from then on a change raises an error, as
// in Envoy, rather than being lost. On the request, the head goes on when the
// script asks for the first piece (as Envoy continues the headers of a
// script waiting for a chunk): the headers can no longer change and
// respond() is refused from then on.
func (h *handle) bodyChunks(L *glua.LState) int {
	h.check(L)
	if h.bodyRead {
		L.RaiseError("cannot call bodyChunks after body processing has begun")
	}
	if !h.canStream(L, "bodyChunks") {
		// No body: an iterator that ends at once.
		L.Push(L.NewFunction(func(*glua.LState) int { return 0 }))
		return 1
	}
	h.bodyRead, h.streamed = true, true
	L.Push(L.NewFunction(h.nextChunk))
	return 1
}

// canStream reports whether the call's message has a body the script
// can stream; a body it cannot reach (a script that came to method
// without naming it, so that it runs on the stream's goroutine) raises
// an error.
func (h *handle) canStream(L *glua.LState, method string) bool {
	if h.wait != nil {
		return true
	}
	has := false
	if h.response {
		_, has = h.s.ResponseBody()
	} else {
		_, has = h.s.RequestBody()
	}
	if has {
		L.RaiseError("%s() of a message with a body: call it by its name (the script must contain %q)", method, method)
	}
	return false
}

// nextChunk is the iterator of bodyChunks(): it gives back the piece the
// script had, then waits for the next; nil at the end of the body.
func (h *handle) nextChunk(L *glua.LState) int {
	h.check(L)
	if !h.awaitChunk(L) {
		return 0
	}
	L.Push(h.fresh(L, &h.chunkUD))
	return 1
}

// awaitChunk gives back the piece the script had, then waits for the
// next: false at the end of the body, with the trailers. The response's
// head leaves with the first bytes given back (httpfilter.HeadHolder), so
// its headers can no longer change from then on.
func (h *handle) awaitChunk(L *glua.LState) bool {
	w := h.wait
	if h.chunksEnded {
		return false
	}
	if h.chunkOut {
		h.chunkOut = false
		if h.response && len(h.chunk) > 0 {
			h.headGone = true
		}
		w.back <- h.chunk
	}
	if !w.streaming {
		w.streaming = true
		w.chunks, w.back = make(chan []byte), make(chan []byte)
		close(w.want)
	}
	h.pause()
	c, ok := <-w.chunks
	if !ok {
		if w.canceled {
			h.abort(L)
		}
		h.resume()
		h.chunksEnded, h.trailers = true, w.trailers
		return false
	}
	h.resume()
	h.chunk, h.chunkOut = c, true
	return true
}
