// SPDX-License-Identifier: Apache-2.0

//go:build !wharf_no_pkg_config

package wharf

func buildTags() []string { return nil }
