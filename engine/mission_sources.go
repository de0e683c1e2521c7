package engine

import "github.com/fieldrelay/fieldrelay/engine/sms"

// Sources of a mission move.
const (
	MoveSourceAPI    = "api"
	MoveSourceDevice = "device"
	MoveSourceSMS    = sms.MoveSource
	MoveSourceSystem = "system"
)
