package engine

import "github.com/fieldrelay/fieldrelay/engine/retention"

// The use cases of retention are retention.Settings', embedded in the Engine.

// DefaultRetentionBatch is the most records one transaction of the retention sweep
// deletes (retention.DefaultBatch).
const DefaultRetentionBatch = retention.DefaultBatch

// RetentionReport tells what a retention sweep deleted, and in how many transactions.
type RetentionReport = retention.Report
