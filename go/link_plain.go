// SPDX-License-Identifier: Apache-2.0

//go:build wharf_no_pkg_config

package wharf

// Built with -tags wharf_no_pkg_config: no pkg-config; CGO_LDFLAGS says where libwharf is
// (-L<dir> -Wl,-rpath,<dir>).

// #cgo LDFLAGS: -lwharf
import "C"
