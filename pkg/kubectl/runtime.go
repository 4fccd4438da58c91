package kubectl

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/outrigger-dev/outrigger/pkg/controller/adminclient"
)

// runtimeCommand is `runtime POD [key=value ...]`.
func runtimeCommand() command {
	return command{
		name:         "runtime",
		usage:        "POD [KEY=VALUE ...]",
		summary:      "show a pod's proxy runtime (/runtime), or set keys in its admin layer (/runtime_modify; KEY= removes the override)",
		needsCluster: true,
		run:          runRuntime,
	}
}

// runRuntime lists the runtime, or sets keys and shows them as the proxy
// reports them afterwards.
func runRuntime(ctx context.Context, a *app, args []string) error {
	if len(args) < 1 {
		return usagef("runtime: want POD [KEY=VALUE ...]")
	}
	values := map[string]string{}
	for _, arg := range args[1:] {
		k, v, ok := strings.Cut(arg, "=")
		if !ok || k == "" {
			return usagef("runtime: %q is not KEY=VALUE", arg)
		}
		values[k] = v
	}
	t, err := a.openPod(ctx, args[0])
	if err != nil {
		return err
	}
	defer t.close()
	if err := t.wrap(t.session.RuntimeModify(ctx, values)); err != nil {
		return err
	}
	rt, err := t.session.Runtime(ctx)
	if err != nil {
		return t.wrap(err)
	}
	return a.runtimeTable(rt, values)
}

// runtimeTable prints the keys of rt (only those of set, when it is not
// empty) with their final value and their value in each layer.
func (a *app) runtimeTable(rt adminclient.Runtime, set map[string]string) error {
	var keys []string
	if len(set) > 0 {
		for k := range set {
			keys = append(keys, k)
		}
	} else {
		for k := range rt.Entries {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	header := []string{"KEY", "VALUE"}
	for _, l := range rt.Layers {
		header = append(header, fmt.Sprintf("LAYER %s", strings.ToUpper(l)))
	}
	tab := newTable(a.stdout, header...)
	for _, k := range keys {
		e, ok := rt.Entries[k]
		if !ok {
			// A key whose override was removed and that no other layer
			// sets is gone.
			e = adminclient.RuntimeEntry{LayerValues: make([]string, len(rt.Layers))}
		}
		tab.row(append([]string{k, e.FinalValue}, e.LayerValues...)...)
	}
	return tab.flush()
}
