package model

import "time"

// Space is what a store knows of the free space of the filesystem that holds it
// (docs/decisions/0112-full-disk.md).
type Space struct {
	// FreeBytes is the space left to the store's files (-1 when it cannot be told).
	FreeBytes int64
	// Low is true below the warning threshold: writes still work, an operator should act.
	Low bool
	// Full is true while writes are refused: below the refusal threshold, or after a
	// write failed for want of space and until the next probe finds room again.
	Full bool
}

// SpaceStore is a Store on a filesystem whose free space it watches (the bbolt store).
type SpaceStore interface {
	Space() Space
}

// DiskFullRetryAfter is the Retry-After of a write refused for want of space.
const DiskFullRetryAfter = 30 * time.Second

// DiskFull is the error of a write refused because the store's filesystem is full: an
// unavailable with Retry-After, as for any other temporary refusal. err is the cause (the
// commit's ENOSPC), nil for a write refused before it was tried.
func DiskFull(err error) *Error {
	return &Error{Kind: KindUnavailable, RetryAfter: DiskFullRetryAfter, Err: err,
		Msg: "the node's disk is full: writes are refused until space is freed (reads still work)"}
}
