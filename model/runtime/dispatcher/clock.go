package dispatcher

import "time"

// Clock maps the wall clock to drill time: drill time runs Speed times
// faster than the wall clock, and both agree at Start. A dispatcher that
// serves a real system runs at Speed 1.
type Clock struct {
	Start time.Time
	Speed float64 // > 0; 0 reads as 1
	// WallNow is the wall clock Now reads; nil means time.Now. A test of
	// what a reader of Now decides moves it by hand instead of sleeping.
	WallNow func() time.Time
}

func (c Clock) speed() float64 {
	if c.Speed > 0 {
		return c.Speed
	}
	return 1
}

// At is the drill-clock time at wall time w.
func (c Clock) At(w time.Time) time.Time {
	return c.Start.Add(time.Duration(float64(w.Sub(c.Start)) * c.speed()))
}

// Now is the drill-clock time now.
func (c Clock) Now() time.Time {
	if c.WallNow != nil {
		return c.At(c.WallNow())
	}
	return c.At(time.Now())
}

// Wall converts a drill duration to wall time.
func (c Clock) Wall(d time.Duration) time.Duration { return time.Duration(float64(d) / c.speed()) }

// WallAt is the wall time at which the drill clock reads t.
func (c Clock) WallAt(t time.Time) time.Time { return c.Start.Add(c.Wall(t.Sub(c.Start))) }

// Drill converts a wall duration to drill time.
func (c Clock) Drill(d time.Duration) time.Duration { return time.Duration(float64(d) * c.speed()) }
