package model

// Limits of payload.required_equipment.
const (
	MaxRequiredEquipment    = 50
	MaxRequiredEquipmentLen = 64
)
