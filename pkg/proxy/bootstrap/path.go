package bootstrap

import (
	"strconv"
)

// Paths are built as strings while walking a configuration. They use the
// proto field names whatever spelling the input used, so one field always
// has one path.

// childPath is the path of field name inside the message at parent.
func childPath(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

// indexPath is the path of element i of the list at parent.
func indexPath(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}

// keyPath is the path of the map entry with a string key at parent.
func keyPath(parent, key string) string {
	return parent + "[" + strconv.Quote(key) + "]"
}
