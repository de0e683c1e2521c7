package model

// SharedStore is implemented by a Store that several processes may use at once: the
// PostgreSQL store of the central tier, where N fieldrelay processes serve one database.
// The engine then learns of outbox entries the other processes wrote, respects their
// leases, and claims periodic work in the store so that it runs once per period across
// processes (docs/decisions/0106-shared-outbox.md). A Store that does not
// implement it (the bbolt store) belongs to one process.
type SharedStore interface {
	// Shared reports whether other processes may write to the store while this one
	// runs.
	Shared() bool
}

// IsShared reports whether s is shared by several processes (SharedStore).
func IsShared(s Store) bool {
	sh, ok := s.(SharedStore)
	return ok && sh.Shared()
}

// NotifyingStore is implemented by a shared store whose processes hear each other's
// changes of the directory by notifications (PostgreSQL's LISTEN): while they do not flow,
// its Version is never trusted (docs/decisions/0220-notifications-fail-closed.md).
type NotifyingStore interface {
	// NotificationsDown says why the notifications do not reach this process ("" while
	// they flow).
	NotificationsDown() string
}
