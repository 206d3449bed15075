package config

// maxResponseBytes bounds log.response_bytes: a response is read up to
// 64 KiB, never more.
const maxResponseBytes = 64 << 10

// validateDeliveryLog checks the delivery log's keys of the log section.
func (c *Config) validateDeliveryLog(p *problems) {
	l := c.Log
	if !l.Enabled {
		return
	}
	if l.MaxAge <= 0 {
		p.add("log.max_age", "must be positive, got %s", l.MaxAge)
	}
	if l.MaxBytes < 1<<20 {
		p.add("log.max_bytes", "must be at least 1 MiB (1048576), got %d", l.MaxBytes)
	}
	if l.ResponseBytes < 0 || l.ResponseBytes > maxResponseBytes {
		p.add("log.response_bytes", "must be between 0 and %d, got %d", maxResponseBytes, l.ResponseBytes)
	}
}
