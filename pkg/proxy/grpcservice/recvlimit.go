package grpcservice

import (
	"context"

	"google.golang.org/grpc"
)

// recvLimit is envoy_grpc.max_receive_message_length: the largest message
// a call may receive, larger ones ending it with RESOURCE_EXHAUSTED, as
// Envoy's decoder does. It is the last call option of every call, so it
// wins over a client's own bound (the discovery streams').
type recvLimit int

// unary bounds a call.
func (n recvLimit) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	return invoker(ctx, method, req, reply, cc, append(opts, grpc.MaxCallRecvMsgSize(int(n)))...)
}

// stream bounds a stream's messages.
func (n recvLimit) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return streamer(ctx, desc, cc, method, append(opts, grpc.MaxCallRecvMsgSize(int(n)))...)
}
