package synopsis

// Room is how many packets the cache holds before it samples (its slots'
// load limit), e.g. to shrink it gradually with Reserve(Room()/4).
func (c *TSCache) Room() uint64 { return uint64(c.limit) }
