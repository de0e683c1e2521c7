package model

// DeviceTx holds the transaction methods of devices, their sequence numbers and their queues.
type DeviceTx interface {
	// Device returns a device of the tenant (KindNotFound when there is none).
	Device(tenantID, id string) (*Device, error)
	// DeviceByHardware returns the device registered with a hardware id (KindNotFound when
	// there is none).
	DeviceByHardware(tenantID, hardwareID string) (*Device, error)
	// PutDevice stores d with its indexes by hardware id, team and zone (KindConflict when
	// another device holds the hardware id).
	PutDevice(tenantID string, d *Device) error
	// PutTeamPositions stores a team whose only change is the position of members. Unlike
	// PutTeam it leaves the tenant's directory version alone: no cached value holds
	// positions, and a device reporting them must not make every cache reload.
	PutTeamPositions(tenantID string, t *Team) error
	// Devices lists a page of the tenant's devices, newest first, and the cursor of the
	// next page ("" at the end; KindValidation for a bad cursor).
	Devices(tenantID string, p Page) ([]Device, string, error)
	// DevicesOfTeam lists the ids of the devices registered to a team, oldest first.
	DevicesOfTeam(tenantID, teamID string) ([]string, error)
	// DevicesOfZone lists the ids of the devices registered to a zone, oldest first.
	DevicesOfZone(tenantID, zoneCode string) ([]string, error)

	// DeviceItem returns what is kept of a device's item by its sequence number, or nil
	// when the sequence has not been received.
	DeviceItem(tenantID, deviceID string, seq int64) (*DeviceItem, error)
	// PutDeviceItem stores a device's item under its sequence number.
	PutDeviceItem(tenantID, deviceID string, it *DeviceItem) error
	// WalkDeviceItems calls fn with the received sequence numbers of a device above after,
	// in ascending order, until fn returns false.
	WalkDeviceItems(tenantID, deviceID string, after int64, fn func(seq int64) bool) error

	// PutQueueItem appends an item to a device's queue.
	PutQueueItem(tenantID, deviceID string, q *QueueItem) error
	// QueueItems lists at most limit items of a device's queue above after, in order.
	QueueItems(tenantID, deviceID string, after int64, limit int) ([]QueueItem, error)
	// DeleteQueueItems removes the items of a device's queue up to through (included) and
	// returns them, in order.
	DeleteQueueItems(tenantID, deviceID string, through int64) ([]QueueItem, error)
	// TakeQueueItem removes the pending item of a device's queue of kind about mission
	// missionID (the lowest, when there are several) and returns it; nil when there is none.
	TakeQueueItem(tenantID, deviceID, kind, missionID string) (*QueueItem, error)
}
