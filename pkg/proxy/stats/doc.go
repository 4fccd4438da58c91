// Package stats is the proxy's statistics engine: counters, gauges, text
// readouts and histograms, the scopes that name them, tag extraction, the
// bootstrap stats_config, streaming renderers for the admin endpoints, and
// the flusher that feeds metrics sinks.
//
// Components look a stat up once, keep the pointer, and update it with one
// atomic operation on the request path; the store's index is only touched
// when a stat is created and when the admin renders. Names are stored as
// shared, interned segments arranged in a tree, so a million counters do not
// hold a million name strings, and the tree keeps each level sorted so that
// rendering walks stats in name order without sorting or copying them.
//
// Three structures keep rendering cheap at a million stats. A compact hash
// index (index.go) finds a node's child prefix without a Go map's per-entry
// cost; a node's stats are found in a small map of the newest ones or by
// binary search of the node's sorted list (young.go), so they cost no slot.
// Each node also lists its used children (usedset.go), filled by a stat's
// first write, so /stats?usedonly walks the used stats only. And the store
// keeps every stat's Prometheus family (families.go), so a scrape does not
// regroup every stat. Renderers read immutable snapshots of these lists and
// never hold a lock while writing to a client.
//
// A component that makes the same set of stats under many scopes (a
// cluster's traffic stats under every cluster.<name>.) describes it once as
// a Template and makes each scope's set as one block (block.go): one
// resolution of the scope's prefix and one merge into its node's sorted
// list, instead of one lookup and one later sort per stat.
package stats
