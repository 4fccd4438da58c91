package xds

import (
	"errors"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
)

// handle applies one response and returns the ACK or NACK to send.
func (a *ADS) handle(sub *ADSSubscription, resp *discoveryv3.DiscoveryResponse) *discoveryv3.DiscoveryRequest {
	defer sub.markReady()
	start := a.opts.Now()
	sub.stats.updateAttempt.Inc()
	err := a.decodeAndApply(sub, resp)
	if err != nil {
		sub.stats.updateRejected.Inc()
		// A management server may send the rejected version again at
		// once, and again: the same rejection is logged once.
		if msg := resp.GetVersionInfo() + "\x00" + err.Error(); msg != sub.lastRejected {
			sub.lastRejected = msg
			logging.Warning(a.opts.Log, "ads: update rejected", "type_url", sub.typeURL, "version", resp.GetVersionInfo(), "error", oneLine(err))
		}
		return &discoveryv3.DiscoveryRequest{
			TypeUrl:       sub.typeURL,
			VersionInfo:   sub.Version(),
			ResponseNonce: resp.GetNonce(),
			ErrorDetail:   nackStatus(err),
		}
	}
	now := a.opts.Now()
	if len(resp.GetResources()) == 0 {
		sub.empty.Inc()
	}
	sub.stats.success(resp.GetVersionInfo(), start, now)
	sub.mu.Lock()
	sub.version, sub.lastUpdated = resp.GetVersionInfo(), now
	sub.mu.Unlock()
	return &discoveryv3.DiscoveryRequest{
		TypeUrl:       sub.typeURL,
		VersionInfo:   resp.GetVersionInfo(),
		ResponseNonce: resp.GetNonce(),
	}
}

// decodeAndApply checks a response as a resource file is checked (the
// same decoder, on its wire form: resource types, unknown fields under
// the policy) and applies it.
func (a *ADS) decodeAndApply(sub *ADSSubscription, resp *discoveryv3.DiscoveryResponse) error {
	data, err := marshalResponse(resp)
	if err != nil {
		return err
	}
	u, unknown, err := sub.dec.decodeBytes("response.pb", data, a.opts.Unknown != UnknownReject)
	if err != nil {
		return err
	}
	if a.opts.Unknown == UnknownWarn {
		for _, p := range unknown {
			if sub.warned[p] {
				continue
			}
			sub.warned[p] = true
			logging.Warning(a.opts.Log, "unknown field in dynamic configuration was ignored", "type_url", sub.typeURL, "field", p)
			if a.opts.UnknownCounter != nil {
				a.opts.UnknownCounter.Inc()
			}
		}
	}
	return sub.apply(u)
}

// maxNackMessage bounds error_detail.message, as Envoy truncates it to
// stay within gRPC's limits on status messages.
const maxNackMessage = 4096

// nackStatus is a NACK's error_detail: Envoy sends code INTERNAL with the
// problem (here every problem, each with its field path).
func nackStatus(err error) *status.Status {
	msg := oneLine(err)
	if len(msg) > maxNackMessage {
		msg = msg[:maxNackMessage]
	}
	return &status.Status{Code: int32(codes.Internal), Message: msg}
}

// marshalResponse is a response's wire form, for the decoder.
func marshalResponse(resp *discoveryv3.DiscoveryResponse) ([]byte, error) {
	data, err := proto.Marshal(resp)
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, errors.New("the response is empty")
	}
	return data, nil
}
