package outlier

import (
	"fmt"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Config is a cluster's outlier_detection with Envoy's defaults applied.
// Runtime keys outlier_detection.* override most values when they are
// read (see Detector).
type Config struct {
	Interval               time.Duration
	BaseEjectionTime       time.Duration
	MaxEjectionTime        time.Duration
	MaxEjectionTimeJitter  time.Duration
	MaxEjectionPercent     uint64
	Consecutive5xx         uint64
	ConsecutiveGateway     uint64
	ConsecutiveLocalOrigin uint64

	EnforcingConsecutive5xx                uint64
	EnforcingConsecutiveGateway            uint64
	EnforcingConsecutiveLocalOrigin        uint64
	EnforcingSuccessRate                   uint64
	EnforcingLocalOriginSuccessRate        uint64
	EnforcingFailurePercentage             uint64
	EnforcingFailurePercentageLocalOrigin  uint64
	SuccessRateMinimumHosts                uint64
	SuccessRateRequestVolume               uint64
	SuccessRateStdevFactor                 uint64
	FailurePercentageThreshold             uint64
	FailurePercentageMinimumHosts          uint64
	FailurePercentageRequestVolume         uint64
	SplitExternalLocalOriginErrors         bool
	SuccessfulActiveHealthCheckUnejectHost bool
	AlwaysEjectOneHost                     bool
	// DetectDegradedHosts degrades a host whose response carries
	// x-envoy-degraded, for base_ejection_time times its degradations
	// (capped by max_ejection_time), as Envoy's detect_degraded_hosts.
	DetectDegradedHosts bool
}

// Envoy's defaults.
const (
	defaultInterval         = 10 * time.Second
	defaultBaseEjectionTime = 30 * time.Second
	defaultMaxEjectionTime  = 300 * time.Second
)

// ConfigError is one problem of an outlier_detection, located by the path
// of its field relative to the message.
type ConfigError struct {
	Path   string
	Reason string
}

func (e *ConfigError) Error() string { return e.Path + ": " + e.Reason }

// ParseConfig applies Envoy's defaults to od and checks what its
// constraints leave open: max_ejection_time below base_ejection_time (as
// Envoy refuses it) and durations out of range. Percentages over 100 and
// non-positive intervals are the message's own constraints, which
// validation checks first; they are checked here again so that a cluster
// never runs with them.
func ParseConfig(od *clusterv3.OutlierDetection) (Config, []error) {
	var errs []error
	dur := func(path string, d *durationpb.Duration, def time.Duration, positive bool) time.Duration {
		if d == nil {
			return def
		}
		if err := d.CheckValid(); err != nil || d.AsDuration() < 0 || (positive && d.AsDuration() == 0) {
			want := "a non-negative duration"
			if positive {
				want = "a positive duration"
			}
			errs = append(errs, &ConfigError{Path: path, Reason: "must be " + want})
			return def
		}
		return d.AsDuration()
	}
	num := func(v *wrapperspb.UInt32Value, def uint64) uint64 {
		if v == nil {
			return def
		}
		return uint64(v.GetValue())
	}
	pct := func(path string, v *wrapperspb.UInt32Value, def uint64) uint64 {
		n := num(v, def)
		if n > 100 {
			errs = append(errs, &ConfigError{Path: path, Reason: fmt.Sprintf("%d is not a percentage (0 to 100)", n)})
			return def
		}
		return n
	}
	c := Config{
		Interval:               dur("interval", od.GetInterval(), defaultInterval, true),
		BaseEjectionTime:       dur("base_ejection_time", od.GetBaseEjectionTime(), defaultBaseEjectionTime, true),
		MaxEjectionTimeJitter:  dur("max_ejection_time_jitter", od.GetMaxEjectionTimeJitter(), 0, false),
		MaxEjectionPercent:     pct("max_ejection_percent", od.GetMaxEjectionPercent(), 10),
		Consecutive5xx:         num(od.GetConsecutive_5Xx(), 5),
		ConsecutiveGateway:     num(od.GetConsecutiveGatewayFailure(), 5),
		ConsecutiveLocalOrigin: num(od.GetConsecutiveLocalOriginFailure(), 5),

		EnforcingConsecutive5xx:               pct("enforcing_consecutive_5xx", od.GetEnforcingConsecutive_5Xx(), 100),
		EnforcingConsecutiveGateway:           pct("enforcing_consecutive_gateway_failure", od.GetEnforcingConsecutiveGatewayFailure(), 0),
		EnforcingConsecutiveLocalOrigin:       pct("enforcing_consecutive_local_origin_failure", od.GetEnforcingConsecutiveLocalOriginFailure(), 100),
		EnforcingSuccessRate:                  pct("enforcing_success_rate", od.GetEnforcingSuccessRate(), 100),
		EnforcingLocalOriginSuccessRate:       pct("enforcing_local_origin_success_rate", od.GetEnforcingLocalOriginSuccessRate(), 100),
		EnforcingFailurePercentage:            pct("enforcing_failure_percentage", od.GetEnforcingFailurePercentage(), 0),
		EnforcingFailurePercentageLocalOrigin: pct("enforcing_failure_percentage_local_origin", od.GetEnforcingFailurePercentageLocalOrigin(), 0),
		SuccessRateMinimumHosts:               num(od.GetSuccessRateMinimumHosts(), 5),
		SuccessRateRequestVolume:              num(od.GetSuccessRateRequestVolume(), 100),
		SuccessRateStdevFactor:                num(od.GetSuccessRateStdevFactor(), 1900),
		FailurePercentageThreshold:            pct("failure_percentage_threshold", od.GetFailurePercentageThreshold(), 85),
		FailurePercentageMinimumHosts:         num(od.GetFailurePercentageMinimumHosts(), 5),
		FailurePercentageRequestVolume:        num(od.GetFailurePercentageRequestVolume(), 50),
		SplitExternalLocalOriginErrors:        od.GetSplitExternalLocalOriginErrors(),
		SuccessfulActiveHealthCheckUnejectHost: od.GetSuccessfulActiveHealthCheckUnejectHost() == nil ||
			od.GetSuccessfulActiveHealthCheckUnejectHost().GetValue(),
		AlwaysEjectOneHost:  od.GetAlwaysEjectOneHost().GetValue(),
		DetectDegradedHosts: od.GetDetectDegradedHosts().GetValue(),
	}
	// Unset, max_ejection_time is the default or base_ejection_time,
	// whichever is larger, as in Envoy.
	c.MaxEjectionTime = dur("max_ejection_time", od.GetMaxEjectionTime(), max(defaultMaxEjectionTime, c.BaseEjectionTime), true)
	if c.MaxEjectionTime < c.BaseEjectionTime {
		errs = append(errs, &ConfigError{Path: "max_ejection_time", Reason: fmt.Sprintf("%s is smaller than base_ejection_time (%s)", c.MaxEjectionTime, c.BaseEjectionTime)})
	}
	return c, errs
}
