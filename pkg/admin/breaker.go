package admin

// breakerRoutes returns the routes of /breaker_event_stream.
// PLACEHOLDER: being written in this session; replaced before commit.
func (a *Admin) breakerRoutes() []Route { return nil }
