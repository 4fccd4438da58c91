package cluster

import (
	"slices"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/lb"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// buildSubsets checks lb_subset_config and converts it; nil when the
// cluster has no subsets. As in Envoy, a configuration without selectors
// turns subsets off (noted, since its other fields then do nothing).
// Errors are relative to the cluster.
func (s *settings) buildSubsets(c *clusterv3.Cluster) []error {
	sc := c.GetLbSubsetConfig()
	if sc == nil {
		return nil
	}
	const path = "lb_subset_config"
	var errs []error
	if c.GetType() == clusterv3.Cluster_ORIGINAL_DST || c.GetLbPolicy() == clusterv3.Cluster_CLUSTER_PROVIDED {
		// Envoy's check: the hosts of a cluster-provided balancer are
		// not known in advance.
		errs = append(errs, configErrorf(path, "cannot be combined with lb_policy CLUSTER_PROVIDED (an ORIGINAL_DST cluster's hosts are not known in advance)"))
	}
	if sc.GetLocalityWeightAware() && c.GetCommonLbConfig().GetLocalityWeightedLbConfig() == nil {
		errs = append(errs, configErrorf(join(path, "locality_weight_aware"), "requires common_lb_config.locality_weighted_lb_config"))
	}
	if len(sc.GetSubsetSelectors()) == 0 {
		s.notes = append(s.notes, "lb_subset_config has no subset_selectors: subsets are off (as in Envoy)")
		return errs
	}
	out := &lb.SubsetConfig{
		DefaultSubset:       criteriaOf(sc.GetDefaultSubset().GetFields()),
		LocalityWeightAware: sc.GetLocalityWeightAware(),
		ScaleLocalityWeight: sc.GetScaleLocalityWeight(),
		PanicModeAny:        sc.GetPanicModeAny(),
		ListAsAny:           sc.GetListAsAny(),
		FallbackList:        sc.GetMetadataFallbackPolicy() == clusterv3.Cluster_LbSubsetConfig_FALLBACK_LIST,
	}
	switch p := sc.GetFallbackPolicy(); p {
	case clusterv3.Cluster_LbSubsetConfig_NO_FALLBACK:
		out.Fallback = lb.FallbackNone
	case clusterv3.Cluster_LbSubsetConfig_ANY_ENDPOINT:
		out.Fallback = lb.FallbackAnyEndpoint
	case clusterv3.Cluster_LbSubsetConfig_DEFAULT_SUBSET:
		out.Fallback = lb.FallbackDefaultSubset
	default:
		errs = append(errs, configErrorf(join(path, "fallback_policy"), "unknown value %d", p))
	}
	switch p := sc.GetMetadataFallbackPolicy(); p {
	case clusterv3.Cluster_LbSubsetConfig_METADATA_NO_FALLBACK, clusterv3.Cluster_LbSubsetConfig_FALLBACK_LIST:
	default:
		errs = append(errs, configErrorf(join(path, "metadata_fallback_policy"), "unknown value %d", p))
	}
	for i, sel := range sc.GetSubsetSelectors() {
		spath := index(join(path, "subset_selectors"), i)
		if len(sel.GetKeys()) == 0 {
			// Envoy skips a selector without keys.
			s.notes = append(s.notes, spath+" has no keys and is ignored (as in Envoy)")
			continue
		}
		ls := lb.SubsetSelector{
			Keys:                sortedUnique(sel.GetKeys()),
			SingleHostPerSubset: sel.GetSingleHostPerSubset(),
			FallbackKeys:        sortedUnique(sel.GetFallbackKeysSubset()),
		}
		switch p := sel.GetFallbackPolicy(); p {
		case clusterv3.Cluster_LbSubsetConfig_LbSubsetSelector_NOT_DEFINED:
			ls.Fallback = lb.FallbackNotDefined
		case clusterv3.Cluster_LbSubsetConfig_LbSubsetSelector_NO_FALLBACK:
			ls.Fallback = lb.FallbackNone
		case clusterv3.Cluster_LbSubsetConfig_LbSubsetSelector_ANY_ENDPOINT:
			ls.Fallback = lb.FallbackAnyEndpoint
		case clusterv3.Cluster_LbSubsetConfig_LbSubsetSelector_DEFAULT_SUBSET:
			ls.Fallback = lb.FallbackDefaultSubset
		case clusterv3.Cluster_LbSubsetConfig_LbSubsetSelector_KEYS_SUBSET:
			ls.Fallback = lb.FallbackKeysSubset
		default:
			errs = append(errs, configErrorf(join(spath, "fallback_policy"), "unknown value %d", p))
		}
		// Envoy's checks of fallback_keys_subset, with its wording.
		kpath := join(spath, "fallback_keys_subset")
		switch {
		case ls.Fallback != lb.FallbackKeysSubset:
			if len(ls.FallbackKeys) > 0 {
				errs = append(errs, configErrorf(kpath, "fallback_keys_subset can be set only for KEYS_SUBSET fallback_policy"))
			}
		case len(ls.FallbackKeys) == 0:
			errs = append(errs, configErrorf(kpath, "fallback_keys_subset cannot be empty"))
		case !isSubset(ls.FallbackKeys, ls.Keys):
			errs = append(errs, configErrorf(kpath, "fallback_keys_subset must be a subset of selector keys"))
		case len(ls.FallbackKeys) == len(ls.Keys):
			errs = append(errs, configErrorf(kpath, "fallback_keys_subset cannot be equal to keys"))
		}
		out.Selectors = append(out.Selectors, ls)
	}
	s.subsets = out
	return errs
}

// criteriaOf turns default_subset's fields into criteria, sorted by name.
func criteriaOf(fields map[string]*structpb.Value) []upstream.MatchCriterion {
	return upstream.NewMetadataMatch(fields).Criteria
}

// sortedUnique sorts keys and drops repeats, as Envoy keeps a selector's
// keys in a set.
func sortedUnique(keys []string) []string {
	out := slices.Clone(keys)
	slices.Sort(out)
	return slices.Compact(out)
}

// isSubset reports whether every element of a (sorted) is in b (sorted).
func isSubset(a, b []string) bool {
	for _, k := range a {
		if _, ok := slices.BinarySearch(b, k); !ok {
			return false
		}
	}
	return true
}
