// SPDX-License-Identifier: Apache-2.0
// A shared library that loads fine but is not an AOTInductor model: it exports none of the
// container entry points (tests/gpu/model_errors_gpu_test.cpp).
int wharf_test_not_a_model(void) { return 42; }
