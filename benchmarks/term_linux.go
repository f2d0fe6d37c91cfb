package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// fileIsTerminal asks the tty driver: only a terminal answers TCGETS.
func fileIsTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
