// SPDX-License-Identifier: Apache-2.0
// A stand-in for a compiled model built against a newer PyTorch: it exports the container
// entry point but imports a shim function no Wharf provides, so loading it must fail at
// dlopen with an error that names the function (tests/gpu/model_errors_gpu_test.cpp).
int aoti_torch_wharf_test_missing(int);
int AOTInductorModelContainerCreateWithDevice(void) { return aoti_torch_wharf_test_missing(1); }
