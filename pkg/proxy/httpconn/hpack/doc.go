// Package hpack is the proxy's HPACK decoder (RFC 7541): it turns the
// header blocks an HTTP/2 client sends into fields without allocating.
//
// golang.org/x/net/http2/hpack makes a new Go string of every literal it
// decodes; a real client's changing values (request ids, trace context,
// :path, grpc-timeout) then cost an allocation each per request. This
// decoder hands out views instead: a literal's bytes where they lie in the
// input, a Huffman-coded one decoded into a buffer the decoder reuses, and
// a table entry where it lies in the dynamic table, whose entries share
// one buffer the table owns. A view is valid only during the call that
// receives it; whoever keeps a field copies it (the HTTP/2 connection
// copies a request's fields into its stream's reused buffer).
//
// The rules are RFC 7541's: integer overflow, indices out of range,
// Huffman strings with EOS or bad padding (§5.2) and dynamic table size
// updates that exceed the bound the decoder announced or come after the
// block's first field (§4.2) are decoding errors, which an HTTP/2 endpoint
// treats as a connection error of type COMPRESSION_ERROR. Strings longer
// than SetMaxStringLength allows fail with ErrStringLength, as x/net's
// decoder does.
package hpack
