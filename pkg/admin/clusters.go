package admin

// clustersRoutes returns the routes of /clusters.
// PLACEHOLDER: being written in this session; replaced before commit.
func (a *Admin) clustersRoutes() []Route { return nil }
