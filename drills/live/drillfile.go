package live

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/stormdrill/stormdrill/drills"
)

// MaxDrillFileBytes bounds a drill file the dispatcher reads.
const MaxDrillFileBytes = 4 << 20

// WriteDrillJSON writes a loaded drill (defaults applied, overrides such as
// --seed included) as JSON, so that a dispatcher child process runs exactly
// the drill the runner runs.
func WriteDrillJSON(d *drills.Drill, path string) error {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// LoadDrill reads a drill for the dispatcher: a TOML drill file (loaded and
// validated) or a JSON file written by WriteDrillJSON.
func LoadDrill(path string) (*drills.Drill, error) {
	if !strings.HasSuffix(path, ".json") {
		return drills.Load(path, nil)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Size() > MaxDrillFileBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, MaxDrillFileBytes)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d drills.Drill
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	// JSON marks every duration as set; a network delay that was absent
	// must stay absent (its distribution is empty).
	for i := range d.Partners {
		if d.Partners[i].NetworkDelay.Dist == "" {
			d.Partners[i].NetworkDelay = drills.Latency{}
		}
	}
	// Not validated again: every duration now reads as set, which the
	// file validation would take for keys the file did not have. The
	// runner validated the drill; PartnerSpecs and ModelPolicy still check
	// what the dispatcher uses.
	if _, err := d.PartnerSpecs(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &d, nil
}
