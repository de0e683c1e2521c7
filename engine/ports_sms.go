package engine

// SMSTx holds the transaction methods of SMS replies (mission codes).
type SMSTx interface {
}
