package logging

import "golang.org/x/sys/unix"

// threadID is %t: the OS thread the logging goroutine runs on.
func threadID() int { return unix.Gettid() }
