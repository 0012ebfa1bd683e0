package host

// SetConsumerHeartbeat sets the consumer-group heartbeat interval of the
// loops NewCoordinator builds from now on, and returns the restore function.
func SetConsumerHeartbeat(ms int32) (restore func()) {
	old := consumerHeartbeatMs
	consumerHeartbeatMs = ms
	return func() { consumerHeartbeatMs = old }
}
