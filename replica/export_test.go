package replica

// QueuedFrames is how many control frames the mirror's reader has queued
// for the next Step (0 when not connected): tests wait on it instead of
// sleeping.
func QueuedFrames(m *Mirror) int {
	if m.c == nil {
		return 0
	}
	return len(m.c.frames)
}
