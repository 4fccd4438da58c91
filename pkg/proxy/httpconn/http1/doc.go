// Package http1 is the proxy's HTTP/1.x codec. It reads request and response
// heads from buffered connections into buffers the caller owns and reuses,
// parses them into views whose byte slices point into those buffers, decides
// how the body is framed by the rules of RFC 9112, streams Content-Length,
// chunked and close-delimited bodies without copying them, and serialises
// heads into reusable byte slices.
//
// Nothing here allocates once the caller's buffers have grown to fit its
// traffic: the steady request path of a proxy is a sequence of reads, parses
// in place, appends and writes. Header names are lower-cased in place while
// parsing (as Envoy sends them), so lookups compare bytes without folding
// case.
//
// A parsed message's slices stay valid until the head buffer it was parsed
// from is reused for the next message; a body piece returned by
// BodyReader.Next stays valid until the next call on the same reader.
package http1
