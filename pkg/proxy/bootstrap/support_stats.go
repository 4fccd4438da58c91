package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedStats lists the stats configuration and stats sink fields Outrigger implements (see supportedCore).
var supportedStats = map[protoreflect.FullName]fieldSupport{}
