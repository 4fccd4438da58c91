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
// the whole body it kept for retries. A hedged attempt starts once the
// attempts before it have sent the whole body (see hedgesHTTP1 and
// armOnBody): its filters read the copy kept for retries again.

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

// rewindAttemptBody readies a hedged attempt's body: when the upstream
// filters of the attempt before buffered it, the copy kept for retries
// is put back in front, from its start, for this attempt's filters to
// buffer again. No attempt reads the body any more: it went out whole.
func (s *stream) rewindAttemptBody() {
	if s.attemptSrc == nil {
		return
	}
	s.restoreAttemptBody()
	if r := s.retry.body; r != nil {
		r.rewind()
	}
}
