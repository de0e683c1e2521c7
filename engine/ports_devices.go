package engine

// DeviceTx holds the transaction methods of devices, their sequence numbers and their queues.
type DeviceTx interface {
}
