package v1alpha1

// Common returns the part of the entry every kind shares, so that the
// controller's rollout code handles the three kinds' targets alike.
func (t *DrainTarget) Common() *TargetStatus { return &t.TargetStatus }

// Common returns the part of the entry every kind shares.
func (t *RuntimeOverrideTarget) Common() *TargetStatus { return &t.TargetStatus }

// Common returns the part of the entry every kind shares.
func (t *HealthCheckTarget) Common() *TargetStatus { return &t.TargetStatus }
