// Package dircache caches values read from a tenant's directory, each good while the
// store's directory version it was read at is current.
package dircache

import "sync"

// versioned is a cached value with the directory version it was read at.
type versioned[T any] struct {
	version uint64
	val     T
}

// Cache caches values read from a tenant's directory (tenant record, keys, users,
// zones, webhooks, teams). An entry is good while the store's directory version it was
// read at is current: the store bumps the version after every commit that changes the
// directory, so a reader takes the version before it reads and never keeps data older
// than the version it files it under. Values are shared: nobody may change them.
type Cache[T any] struct{ m sync.Map }

// Get returns the value under k when it was read at version v.
func (c *Cache[T]) Get(k string, v uint64) (T, bool) {
	if x, ok := c.m.Load(k); ok {
		if e := x.(versioned[T]); e.version == v {
			return e.val, true
		}
	}
	var zero T
	return zero, false
}

// Put files val under k, read at version v.
func (c *Cache[T]) Put(k string, v uint64, val T) { c.m.Store(k, versioned[T]{v, val}) }
