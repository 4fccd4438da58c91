package admin

// listenersRoutes returns the routes of /listeners.
// PLACEHOLDER: being written in this session; replaced before commit.
func (a *Admin) listenersRoutes() []Route { return nil }
