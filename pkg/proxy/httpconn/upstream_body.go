package httpconn

// The request body an attempt's upstream filters buffer (Envoy's
// upstream filter manager buffers per UpstreamRequest). An upstream
// filter that calls BufferRequestBody reads the body into a replayBody of
// the attempt, in front of what the attempt would have read: the bytes a
// retry replays (retryBody), a shadow's copy (mirrorBody), the bytes a
// downstream filter buffered, or the client's. The attempt then forwards
// the buffered bytes and the rest. The next attempt starts again from
// what was in front before, rewound for the retry, so that its filters
// buffer the body again, as Envoy's router gives each upstream request
// the whole body it kept for retries. A hedged attempt runs while
// another attempt still reads the body: it keeps the replayBody, which
// holds the whole body by then (the race starts once the body was read
// whole), and its filters find it buffered already.

// holdForAttempt records the body source in front of which an upstream
// filter is about to buffer, to be put back once the attempt is over
// (restoreAttemptBody). Only the first buffering filter of an attempt
// records it.
func (s *stream) holdForAttempt() {
	if s.attemptSrc == nil {
		s.attemptSrc = s.body
	}
}

// restoreAttemptBody puts back the body source of the last attempt whose
// upstream filters buffered the body: before another attempt (which
// rewinds a retry's copy as usual), and once the router is done.
func (s *stream) restoreAttemptBody() {
	if s.attemptSrc != nil {
		s.body, s.attemptSrc = s.attemptSrc, nil
	}
}
