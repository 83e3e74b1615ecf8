package tuning

import "unsafe"

// HugePagesOf is HugePages for the backing array of s, up to its length.
func HugePagesOf[T any](s []T) {
	var zero T
	HugePages(unsafe.Pointer(unsafe.SliceData(s)), uintptr(len(s))*unsafe.Sizeof(zero))
}
