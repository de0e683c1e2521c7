package engine

// Sources of a mission move.
const (
	MoveSourceAPI    = "api"
	MoveSourceDevice = "device"
	MoveSourceSMS    = "sms"
	MoveSourceSystem = "system"
)
