package drills

import (
	"fmt"
	"time"

	"github.com/stormdrill/stormdrill/reports/tally"
)

// What every runner (drills/sim, drills/live, drills/external) shares.

// MaxTransitions bounds the breaker transitions kept for the summary.
const MaxTransitions = tally.MaxTransitions

// ErrAccounting is returned when a run breaks the accounting identity
// created = delivered + dead-lettered + pending.
var ErrAccounting = tally.ErrAccounting

// Progress is reported while a run goes on.
type Progress struct {
	DrillTime, Total time.Duration
	Created, DLQ     int64
}

// DeliveryID is the stable id of a delivery: event number and subscriber.
func DeliveryID(event int64, subscriber string) string {
	return fmt.Sprintf("evt-%06d:%s", event, subscriber)
}

// ActionWho names drill action i (0-based) in replay audit records, in
// every mode.
func ActionWho(i int) string { return "drill action " + itoa(i+1) }
