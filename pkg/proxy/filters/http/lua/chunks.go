package lua

import (
	glua "github.com/yuin/gopher-lua"
)

// bodyChunks is the handle's bodyChunks(): an iterator over the response
// body's pieces as they arrive, each a buffer object whose setBytes
// replaces the piece; nothing is buffered. The response head is held
// until the first bytes leave, so the script may change the headers
// until the first piece it lets through.
func (h *handle) bodyChunks(L *glua.LState) int {
	h.check(L)
	if !h.response {
		L.RaiseError("bodyChunks() of a request is not supported by Outrigger")
	}
	if h.bodyRead {
		L.RaiseError("cannot call bodyChunks after body processing has begun")
	}
	if h.wait == nil {
		if _, has := h.s.ResponseBody(); has {
			L.RaiseError("bodyChunks() of a response: call it by its name (the script must contain \"bodyChunks\")")
		}
		// No body: an iterator that ends at once.
		L.Push(L.NewFunction(func(*glua.LState) int { return 0 }))
		return 1
	}
	h.bodyRead, h.streamed = true, true
	L.Push(L.NewFunction(h.nextChunk))
	return 1
}

// nextChunk is the iterator of bodyChunks(): it gives back the piece the
// script had, then waits for the next; nil at the end of the body.
func (h *handle) nextChunk(L *glua.LState) int {
	h.check(L)
	w := h.wait
	if h.chunksEnded {
		return 0
	}
	if h.chunkOut {
		h.chunkOut = false
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
		return 0
	}
	h.resume()
	h.chunk, h.chunkOut = c, true
	L.Push(h.chunkUD)
	return 1
}
