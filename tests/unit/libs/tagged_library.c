// SPDX-License-Identifier: Apache-2.0
// A library whose code says which one it is, for the model library loader's tests
// (tests/unit/zip_archive_test.cpp). Built as tagged_a and tagged_b, which the dynamic
// loader never unloads (-z nodelete, as AOTInductor models: their STB_GNU_UNIQUE symbols
// keep them loaded), and tagged_c, which dlclose unloads. Exported explicitly: the project
// builds with hidden visibility.
__attribute__((visibility("default"))) const char* wharf_test_library_tag(void) { return WHARF_TEST_TAG; }
