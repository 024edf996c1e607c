package neigh

import (
	"context"
	"net/netip"
	"sync"
	"time"
)

// CacheTTL is how long a Cache keeps a resolved hop by default.
const CacheTTL = 5 * time.Second

// maxCacheEntries triggers a sweep of expired entries when a Cache grows.
const maxCacheEntries = 4096

// Cache remembers resolved hops so a TX path can look up each new
// destination cheaply. The zero Cache is ready to use and caches for
// CacheTTL. Lookups that hit do not allocate. Failures are not cached.
// A Cache resolves in the namespace of the calling thread; use one Cache per
// namespace. It is safe for concurrent use.
type Cache struct {
	// TTL overrides CacheTTL when positive. Set it before first use.
	TTL time.Duration
	// Resolver resolves misses (nil: in the calling thread's namespace).
	Resolver *Resolver

	mu sync.Mutex
	m  map[netip.Addr]cacheEntry
}

type cacheEntry struct {
	hop     Hop
	expires time.Time
}

// Lookup returns the cached hop for dst, or resolves (see Resolve) and
// caches it.
func (c *Cache) Lookup(ctx context.Context, dst netip.Addr) (Hop, error) {
	dst = dst.Unmap()
	now := time.Now()
	c.mu.Lock()
	e, ok := c.m[dst]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.hop, nil
	}
	r := c.Resolver
	if r == nil {
		r = current
	}
	hop, err := r.Resolve(ctx, dst)
	if err != nil {
		return Hop{}, err
	}
	c.store(dst, hop, time.Now())
	return hop, nil
}

// store caches hop for dst, sweeping expired entries when the map is big.
func (c *Cache) store(dst netip.Addr, hop Hop, now time.Time) {
	ttl := c.TTL
	if ttl <= 0 {
		ttl = CacheTTL
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[netip.Addr]cacheEntry)
	}
	if len(c.m) >= maxCacheEntries {
		for k, e := range c.m {
			if !now.Before(e.expires) {
				delete(c.m, k)
			}
		}
	}
	c.m[dst] = cacheEntry{hop: hop, expires: now.Add(ttl)}
}

// Forget drops dst's entry, for instance after the hop stopped working.
func (c *Cache) Forget(dst netip.Addr) {
	c.mu.Lock()
	delete(c.m, dst.Unmap())
	c.mu.Unlock()
}

// Flush drops every entry.
func (c *Cache) Flush() {
	c.mu.Lock()
	clear(c.m)
	c.mu.Unlock()
}
