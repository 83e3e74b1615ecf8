package drills

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// overrideSeg is one piece of an override key: name or name[index].
type overrideSeg struct {
	name  string
	index int // -1: none
}

func parseOverrideKey(key string) ([]overrideSeg, error) {
	if key == "" || len(key) > 200 {
		return nil, errors.New("bad key")
	}
	var segs []overrideSeg
	for _, piece := range strings.Split(key, ".") {
		seg := overrideSeg{name: piece, index: -1}
		if i := strings.IndexByte(piece, '['); i >= 0 {
			if !strings.HasSuffix(piece, "]") {
				return nil, fmt.Errorf("bad index in %q", piece)
			}
			n, err := strconv.Atoi(piece[i+1 : len(piece)-1])
			if err != nil || n < 0 {
				return nil, fmt.Errorf("bad index in %q", piece)
			}
			seg.name, seg.index = piece[:i], n
		}
		if seg.name == "" {
			return nil, errors.New("empty piece in key")
		}
		segs = append(segs, seg)
	}
	return segs, nil
}

// parseOverrideValue reads a TOML value; text that is not TOML is a string.
func parseOverrideValue(raw string) (v any, err error) {
	if strings.ContainsAny(raw, "\r\n") {
		return nil, errors.New("value must be on one line")
	}
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("cannot parse %q", raw)
		}
	}()
	var m map[string]any
	if _, err := toml.Decode("v = "+raw, &m); err == nil {
		if val, ok := m["v"]; ok && len(m) == 1 {
			return val, nil
		}
	}
	if t := strings.TrimSpace(raw); t != "" && !strings.ContainsAny(t[:1], `"'[{`) {
		return t, nil
	}
	return nil, fmt.Errorf("%q is not a TOML value", raw)
}

// applyOverrides sets each override in the merged tree, checking the key
// against the schema first.
func (ld *loader) applyOverrides(tree map[string]any, overrides map[string]string) {
	if len(overrides) > maxOverrides {
		ld.errs = append(ld.errs, &Error{File: ld.top, Msg: fmt.Sprintf("too many overrides (%d; at most %d)", len(overrides), maxOverrides)})
		return
	}
	keys := make([]string, 0, len(overrides))
	for k := range overrides {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, key := range keys {
		bad := func(msg string) {
			ld.errs = append(ld.errs, &Error{File: ld.top, Key: key, Msg: "override: " + msg})
		}
		segs, err := parseOverrideKey(key)
		if err != nil {
			bad(err.Error())
			continue
		}
		// Check the whole key against the schema before touching the tree.
		spath, ok := "", true
		for i, s := range segs {
			p := joinKey(spath, s.name)
			sk, known := schema()[p]
			if arr, isArr := schema()[p+"[]"]; isArr {
				sk, known, p = arr, true, p+"[]"
			}
			if p == "include" {
				bad("include cannot be overridden")
				ok = false
				break
			}
			if !known {
				bad(unknownKeyMsg(spath, s.name))
				ok = false
				break
			}
			if s.index >= 0 && sk.Kind != tableArrayKey {
				bad(fmt.Sprintf("%s is not an array of tables; it takes no index", s.name))
				ok = false
				break
			}
			if sk.Kind == leafKey && i < len(segs)-1 {
				bad(fmt.Sprintf("%s is not a table", strings.ReplaceAll(p, "[]", "")))
				ok = false
				break
			}
			spath = p
		}
		if !ok {
			continue
		}
		val, err := parseOverrideValue(overrides[key])
		if err != nil {
			bad(err.Error())
			continue
		}
		if msg := ld.setOverride(tree, segs, "", "", val); msg != "" {
			bad(msg)
		}
	}
}

// setOverride sets segs under the table m (at path) to val.
func (ld *loader) setOverride(m map[string]any, segs []overrideSeg, path, spath string, val any) string {
	s := segs[0]
	p := joinKey(path, s.name)
	sp := joinKey(spath, s.name)
	if len(segs) == 1 && s.index < 0 {
		m[s.name] = val
		ld.markOverride(p)
		return ""
	}
	if _, isArr := schema()[sp+"[]"]; isArr {
		elems, ok := tableElems(m[s.name])
		if !ok || len(elems) == 0 {
			return fmt.Sprintf("the drill has no %s", s.name)
		}
		if s.index >= len(elems) {
			return fmt.Sprintf("%s[%d] does not exist; the drill has %d", s.name, s.index, len(elems))
		}
		for i, e := range elems {
			if s.index >= 0 && i != s.index {
				continue
			}
			ep := p + "[" + strconv.Itoa(i) + "]"
			if len(segs) == 1 {
				// The whole element is replaced.
				if vm, ok := val.(map[string]any); ok {
					elems[i] = vm
					if a, ok := m[s.name].([]any); ok {
						a[i] = vm
					}
					ld.markOverride(ep)
					continue
				}
				return fmt.Sprintf("%s[%d] takes a table", s.name, i)
			}
			if msg := ld.setOverride(e, segs[1:], ep, sp+"[]", val); msg != "" {
				return msg
			}
		}
		return ""
	}
	sub, ok := m[s.name].(map[string]any)
	if !ok {
		if _, exists := m[s.name]; exists {
			return fmt.Sprintf("%s is not a table in the drill", p)
		}
		sub = map[string]any{}
		m[s.name] = sub
	}
	return ld.setOverride(sub, segs[1:], p, sp, val)
}

func (ld *loader) markOverride(p string) {
	for k := range ld.origins {
		if hasKeyPrefix(k, p) {
			delete(ld.origins, k)
		}
	}
	ld.origins[p] = origin{file: ld.top, override: true}
}
