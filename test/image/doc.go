// Package image tests the sidecar and controller images end to end: it
// builds and pushes them with hack/imagebuild (the code `make push` runs)
// to a registry started in the test (go-containerregistry's registry
// package), pulls them back and checks their platforms, config, files and
// labels, runs the binary taken out of the image, and checks that a second
// build gives the same digests. Run with `make test-image`.
package image
