package host

import "time"

// SetTopicRefresh sets the periodic topic refresh of the loops
// NewCoordinator builds from now on, and returns the restore function.
func SetTopicRefresh(d time.Duration) (restore func()) {
	old := topicRefresh
	topicRefresh = d
	return func() { topicRefresh = old }
}
