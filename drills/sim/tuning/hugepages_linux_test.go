//go:build linux && !stormdrill_notuning

package tuning

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// TestHugePagesMarksWholePages: the whole 2 MiB pages inside the range are
// marked for huge pages (the kernel lists "hg" in the mapping's VmFlags),
// and the ragged ends are not.
func TestHugePagesMarksWholePages(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skip("no transparent huge pages:", err)
	}
	const huge = 2 << 20
	mem, err := syscall.Mmap(-1, 0, 4*huge, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(mem)
	p := unsafe.Pointer(unsafe.SliceData(mem))
	first := (uintptr(p) + 2*huge - 1) &^ (huge - 1) // a whole huge page with room before it
	// From a page before it to a page after the next one: one whole page.
	HugePages(unsafe.Add(p, first-uintptr(p)-4096), huge+2*4096)
	if !hugeFlag(t, first) {
		t.Errorf("the whole huge page at %#x is not marked", first)
	}
	if hugeFlag(t, first-4096) || hugeFlag(t, first+huge) {
		t.Errorf("the ragged ends are marked too")
	}
}

// hugeFlag reports whether the mapping holding addr has MADV_HUGEPAGE set.
func hugeFlag(t *testing.T, addr uintptr) bool {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x", &lo, &hi); n == 2 && strings.Contains(line, " ") && !strings.HasSuffix(strings.Fields(line)[0], ":") {
			in = addr >= lo && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.Contains(line+" ", " hg ")
		}
	}
	t.Fatalf("no mapping holds %#x", addr)
	return false
}

// HugePagesOf covers a slice's whole backing array, not its first element.
func TestHugePagesOfCoversTheSlice(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skip("no transparent huge pages:", err)
	}
	const huge = 2 << 20
	s := make([]uint64, 3*huge/8) // 6 MiB: at least one whole huge page past the first 2 MiB
	HugePagesOf(s)
	base := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	last := (base + uintptr(len(s))*8) &^ (huge - 1) // the end's huge page boundary
	if !hugeFlag(t, last-huge) {
		t.Errorf("the last whole huge page of the slice, at %#x, is not marked", last-huge)
	}
}
