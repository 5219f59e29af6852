// SPDX-License-Identifier: Apache-2.0

//go:build !wharf_no_pkg_config

package wharf

// The library is found with pkg-config (wharf.pc of an installed prefix: set
// PKG_CONFIG_PATH to <prefix>/lib/pkgconfig when it is not a system directory). Build with
// -tags wharf_no_pkg_config to link with plain -lwharf instead and give the flags in
// CGO_LDFLAGS.

// #cgo pkg-config: wharf
import "C"
