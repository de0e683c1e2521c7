package model

// TxCommit is what every transaction offers beside its records: callbacks that run once it
// commits, and the state the engine keeps for the length of one transaction.
type TxCommit interface {
	// OnCommit registers fn to run after the transaction commits (never on rollback).
	OnCommit(fn func())
	// Local returns the transaction's local state (TxLocal): one per transaction, and one
	// per run of a Batch function, so that a run made again starts from nothing.
	Local() *TxLocal
}

// TxLocal is the state the engine keeps for the length of one transaction under keys of
// its own: what a use case asked to be written before the commit (the records it changed,
// the usage it counted; engine/writes). A store hands it out and never reads it.
type TxLocal struct {
	vals []txLocalValue
}

type txLocalValue struct {
	key, val any
}

// Value returns the value stored under key, nil when there is none.
func (l *TxLocal) Value(key any) any {
	for i := range l.vals {
		if l.vals[i].key == key {
			return l.vals[i].val
		}
	}
	return nil
}

// SetValue stores v under key.
func (l *TxLocal) SetValue(key, v any) {
	for i := range l.vals {
		if l.vals[i].key == key {
			l.vals[i].val = v
			return
		}
	}
	l.vals = append(l.vals, txLocalValue{key, v})
}
