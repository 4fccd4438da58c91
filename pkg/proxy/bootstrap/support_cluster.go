package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedCluster lists the cluster fields Outrigger implements (see supportedCore).
var supportedCluster = map[protoreflect.FullName]fieldSupport{}
