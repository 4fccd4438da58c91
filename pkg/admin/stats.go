package admin

// statsRoutes returns the routes of /stats family.
// PLACEHOLDER: being written in this session; replaced before commit.
func (a *Admin) statsRoutes() []Route { return nil }
