package archive

import "unsafe"

// blockAlign is the alignment O_DIRECT asks of a write's memory, file
// offset and length: the page size, which covers the logical block size
// of every disk this runs on (512 or 4096 bytes).
const blockAlign = 4096

// alignedBuffer returns an empty buffer of capacity size whose first
// byte is blockAlign-aligned, for O_DIRECT writes. It is ordinary Go
// memory: the collector frees it.
func alignedBuffer(size int) []byte {
	b := make([]byte, size+blockAlign)
	skip := (blockAlign - int(uintptr(unsafe.Pointer(&b[0]))&(blockAlign-1))) & (blockAlign - 1)
	return b[skip : skip : skip+size]
}

// isAligned reports whether b starts on a blockAlign boundary (a buffer
// that append grew past alignedBuffer's capacity may not).
func isAligned(b []byte) bool {
	return cap(b) > 0 && uintptr(unsafe.Pointer(unsafe.SliceData(b)))&(blockAlign-1) == 0
}

// holds reports whether addr is inside m's mapping.
func (m *mappedFile) holds(addr uintptr) bool {
	if len(m.data) == 0 {
		return false
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(m.data)))
	return addr >= start && addr < start+uintptr(len(m.data))
}
