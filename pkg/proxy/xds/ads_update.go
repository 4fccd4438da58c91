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
	if len(resp.GetResources()) >= heldGCResources {
		defer a.holdGC()()
	}
	err := a.process(sub, resp.GetVersionInfo(), func() (bool, error) {
		u, err := a.decode(sub, resp)
		if err != nil {
			return false, err
		}
		return len(u.Resources) == 0, sub.apply(u)
	})
	if err != nil {
		return &discoveryv3.DiscoveryRequest{
			TypeUrl:       sub.typeURL,
			VersionInfo:   sub.Version(),
			ResponseNonce: resp.GetNonce(),
			ErrorDetail:   nackStatus(err),
		}
	}
	return &discoveryv3.DiscoveryRequest{
		TypeUrl:       sub.typeURL,
		VersionInfo:   resp.GetVersionInfo(),
		ResponseNonce: resp.GetNonce(),
	}
}

// process runs the update of one response of version (of either
// protocol) and keeps the subscription's stats: update_attempt, then
// update_rejected (the rejection logged once however often it comes
// back) or update_success with the version stats, and update_empty when
// apply says the update had nothing. The first response, accepted or
// not, ends the wait for the subscription.
func (a *ADS) process(sub *ADSSubscription, version string, apply func() (empty bool, err error)) error {
	defer sub.markReady()
	start := a.opts.Now()
	a.streamAttempt(sub)
	empty, err := apply()
	if err != nil {
		sub.stats.updateRejected.Inc()
		// A management server may send the rejected version again at
		// once, and again: the same rejection is logged once.
		if msg := version + "\x00" + err.Error(); msg != sub.lastRejected {
			sub.lastRejected = msg
			logging.Warning(a.opts.Log, "ads: update rejected", "type_url", sub.typeURL, "version", version, "error", oneLine(err))
		}
		return err
	}
	now := a.opts.Now()
	if empty {
		sub.empty.Inc()
	}
	// As for a file: the version first, so that update_success and
	// version_text never run ahead of Version() and /config_dump.
	sub.mu.Lock()
	sub.version, sub.lastUpdated = version, now
	sub.mu.Unlock()
	sub.stats.success(version, start, now)
	return nil
}

// decode checks a response as a resource file is checked (the same
// checks, on its wire form: resource types, unknown fields under the
// policy): its resources straight from their Any values when it is
// plain, else by the file decoder, on the response re-encoded.
func (a *ADS) decode(sub *ADSSubscription, resp *discoveryv3.DiscoveryResponse) (Update, error) {
	if u, unknown, ok := sub.dec.decodeResponse(resp, a.opts.Unknown != UnknownReject); ok {
		a.warnUnknown(sub, unknown)
		return u, nil
	}
	data, err := marshalResponse(resp)
	if err != nil {
		return Update{}, err
	}
	return a.decodeData(sub, "response.pb", data)
}

// decodeData decodes a response in the format name's extension gives
// (a gRPC response's wire form, a REST response's JSON), warning about
// unknown fields under the policy.
func (a *ADS) decodeData(sub *ADSSubscription, name string, data []byte) (Update, error) {
	u, unknown, err := sub.dec.decodeBytes(name, data, a.opts.Unknown != UnknownReject)
	if err != nil {
		return Update{}, err
	}
	a.warnUnknown(sub, unknown)
	return u, nil
}

// warnUnknown warns once about each unknown field path dropped from a
// response, under the policy that warns.
func (a *ADS) warnUnknown(sub *ADSSubscription, unknown []string) {
	if a.opts.Unknown != UnknownWarn {
		return
	}
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
