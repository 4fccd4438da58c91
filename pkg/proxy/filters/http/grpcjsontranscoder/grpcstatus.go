package grpcjsontranscoder

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
)

// grpcToHTTP maps a gRPC status code to the HTTP status of the
// transcoded response, as Envoy's Grpc::Utility::grpcToHttpStatus.
func grpcToHTTP(code int) int {
	switch code {
	case 0:
		return 200
	case 1: // CANCELLED
		return 499
	case 3, 9, 11: // INVALID_ARGUMENT, FAILED_PRECONDITION, OUT_OF_RANGE
		return 400
	case 4: // DEADLINE_EXCEEDED
		return 504
	case 5: // NOT_FOUND
		return 404
	case 6, 10: // ALREADY_EXISTS, ABORTED
		return 409
	case 7: // PERMISSION_DENIED
		return 403
	case 8: // RESOURCE_EXHAUSTED
		return 429
	case 12: // UNIMPLEMENTED
		return 501
	case 14: // UNAVAILABLE
		return 503
	case 16: // UNAUTHENTICATED
		return 401
	}
	return 500 // UNKNOWN, INTERNAL, DATA_LOSS and the rest
}

// parseGrpcStatus reads a grpc-status value; ok is false when it is
// absent or not a number (Envoy's InvalidCode).
func parseGrpcStatus(v string, present bool) (int, bool) {
	if !present {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
	if err != nil {
		return 0, false
	}
	return int(n), true
}

// isGrpcResponse is Envoy's isGrpcResponseHeaders: a trailers-only
// response carries grpc-status; any other is a 200 of a gRPC content
// type.
func isGrpcResponse(status int, contentType string, hasGrpcStatus, hasBody bool) bool {
	if !hasBody {
		return hasGrpcStatus
	}
	return status == 200 && isGrpcContentType(contentType)
}

// isGrpcContentType reports application/grpc, with or without a +suffix
// or parameters.
func isGrpcContentType(ct string) bool {
	const grpcCT = "application/grpc"
	if len(ct) < len(grpcCT) || !strings.EqualFold(ct[:len(grpcCT)], grpcCT) {
		return false
	}
	rest := ct[len(grpcCT):]
	return rest == "" || rest[0] == '+' || rest[0] == ';'
}

// statusJSON is the google.rpc.Status of a failed call as JSON
// (convert_grpc_status): the grpc-status-details-bin one, else one made
// of grpc-status and grpc-message. ok is false when it cannot be printed
// (a detail whose type the descriptors lack): the status then stays in
// the headers.
func (t *transcoder) statusJSON(code int, message string, hasMessage bool, detailsBin string, hasDetails bool) ([]byte, bool) {
	st := &status.Status{}
	parsed := false
	if hasDetails {
		raw, err := base64.StdEncoding.DecodeString(detailsBin)
		if err != nil {
			raw, err = base64.RawStdEncoding.DecodeString(detailsBin)
		}
		parsed = err == nil && proto.Unmarshal(raw, st) == nil
	}
	if !parsed {
		st = &status.Status{Code: int32(code)}
		if hasMessage {
			st.Message = unescapeAll(message)
		}
	}
	b, err := t.print.Marshal(st)
	if err != nil {
		return nil, false
	}
	return t.format(b), true
}

// format renders printed JSON as Envoy's printer does: compact, or
// indented with add_whitespace (protojson's own spacing varies on
// purpose).
func (t *transcoder) format(b []byte) []byte {
	var buf bytes.Buffer
	var err error
	if t.whitespace {
		err = json.Indent(&buf, b, "", "  ")
	} else {
		err = json.Compact(&buf, b)
	}
	if err != nil {
		return b
	}
	return buf.Bytes()
}
