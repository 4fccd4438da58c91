package xds

import (
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// ListenerTypeURL is the type URL of listener resources (LDS).
const ListenerTypeURL = "type.googleapis.com/envoy.config.listener.v3.Listener"

// UnknownPolicy says what happens to unknown fields in dynamic resources.
type UnknownPolicy int

const (
	// UnknownWarn drops unknown fields, logs a warning and counts each
	// distinct field once (Envoy's default).
	UnknownWarn UnknownPolicy = iota
	// UnknownReject rejects an update with an unknown field
	// (--reject-unknown-dynamic-fields).
	UnknownReject
	// UnknownIgnore drops unknown fields silently
	// (--ignore-unknown-dynamic-fields).
	UnknownIgnore
)

// FileOptions configure a FileSubscription.
type FileOptions struct {
	// Path is the file holding the DiscoveryResponse (required). Its
	// extension chooses the format: .yaml, .yml, .json, .pb or .pb_text.
	Path string
	// WatchedDirectory, when set, is watched instead of Path's directory:
	// any file moved into it triggers a reload of Path. This is how a
	// Kubernetes ConfigMap volume is followed, since its files are
	// symbolic links that never change themselves.
	WatchedDirectory string
	// WatchModify is the watched directory's watch_modify: a file written
	// in place in it (IN_MODIFY) reloads Path too, not only a move.
	WatchModify bool
	// TypeURL is the type of the resources, e.g. ListenerTypeURL. It must
	// be a type linked into the binary.
	TypeURL string
	// Stats is the scope of the subscription stats (required), e.g.
	// store.Scope("listener_manager.lds.").
	Stats stats.Scope
	// Log receives the update warnings. The zero Logger discards them.
	Log logr.Logger
	// Unknown is the unknown-field policy; the zero value warns.
	Unknown UnknownPolicy
	// UnknownCounter, when set, counts the distinct unknown fields warned
	// about (server.dynamic_unknown_fields); only UnknownWarn counts.
	UnknownCounter *stats.Counter
	// Now is the clock of update_time and update_duration; nil means
	// time.Now.
	Now func() time.Time
}

// Update is one accepted read of the file, for the apply function.
type Update struct {
	// VersionInfo is the response's version_info.
	VersionInfo string
	// Resources are the resources, in file order, decoded into TypeURL's
	// generated type (*listenerv3.Listener for ListenerTypeURL), with any
	// envoy.service.discovery.v3.Resource wrapper removed. The set is the
	// whole state of the world: a resource missing from it was removed.
	// Over the incremental protocol, a wildcard subscription's update is
	// the whole set too (the response's resources first, in its order,
	// then the unchanged ones), and a named subscription's holds the
	// response's resources only.
	Resources []proto.Message
	// ResourceVersions are the resources' own versions, by index, over
	// the incremental protocol; nil otherwise (see VersionOf).
	ResourceVersions []string
}

// VersionOf is the version of Resources[i]: its own over the incremental
// protocol, the response's version_info otherwise.
func (u Update) VersionOf(i int) string {
	if i < len(u.ResourceVersions) {
		return u.ResourceVersions[i]
	}
	return u.VersionInfo
}
